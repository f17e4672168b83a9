import CDBus

/// A complete D-Bus type, as one signature denotes it.
public indirect enum DBusType: Hashable, Sendable {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case array(DBusType)
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])
    case variant

    /// The type's signature, built from libdbus's own type codes.
    public var signature: String {
        // A one-letter string is stored inline: no allocation on the path of every reply.
        if let code = typeCode { return String(Unicode.Scalar(UInt8(code))) }
        var scalars = String.UnicodeScalarView()
        appendSignature(to: &scalars)
        return String(scalars)
    }

    private func appendSignature(to out: inout String.UnicodeScalarView) {
        func code(_ c: Int32) { out.append(Unicode.Scalar(UInt8(c))) }
        if let typeCode { return code(typeCode) }
        switch self {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double,
            .string, .objectPath, .signature, .unixFD, .variant:
            break
        case .array(let element):
            code(CDBus_TYPE_ARRAY)
            element.appendSignature(to: &out)
        case .dictionary(let key, let value):
            code(CDBus_TYPE_ARRAY)
            out.append("{")
            key.appendSignature(to: &out)
            value.appendSignature(to: &out)
            out.append("}")
        case .structure(let fields):
            out.append("(")
            for field in fields { field.appendSignature(to: &out) }
            out.append(")")
        }
    }

    /// libdbus's type code of a basic type or variant; nil for containers.
    private var typeCode: Int32? {
        switch self {
        case .byte: CDBus_TYPE_BYTE
        case .boolean: CDBus_TYPE_BOOLEAN
        case .int16: CDBus_TYPE_INT16
        case .uint16: CDBus_TYPE_UINT16
        case .int32: CDBus_TYPE_INT32
        case .uint32: CDBus_TYPE_UINT32
        case .int64: CDBus_TYPE_INT64
        case .uint64: CDBus_TYPE_UINT64
        case .double: CDBus_TYPE_DOUBLE
        case .string: CDBus_TYPE_STRING
        case .objectPath: CDBus_TYPE_OBJECT_PATH
        case .signature: CDBus_TYPE_SIGNATURE
        case .unixFD: CDBus_TYPE_UNIX_FD
        case .variant: CDBus_TYPE_VARIANT
        case .array, .dictionary, .structure: nil
        }
    }

    /// Whether the type may be a dictionary key.
    public var isBasic: Bool {
        switch self {
        case .array, .dictionary, .structure, .variant: false
        default: true
        }
    }

    /// Parses a signature into its complete types; nil when libdbus would reject it.
    public static func parse(signature: String) -> [DBusType]? {
        guard signature.utf8.count <= 255, !signature.utf8.contains(0) else { return nil }
        let valid = signature.withCString { dbus_signature_validate($0, nil) } != 0
        guard valid else { return nil }
        var bytes = Array(signature.utf8)[...]
        var types: [DBusType] = []
        while !bytes.isEmpty {
            guard let type = parseOne(&bytes) else { return nil }
            types.append(type)
        }
        return types
    }

    /// Parses a signature that must hold exactly one complete type.
    public static func parseSingle(signature: String) -> DBusType? {
        guard let types = parse(signature: signature), types.count == 1 else { return nil }
        return types[0]
    }

    private static func parseOne(_ bytes: inout ArraySlice<UInt8>) -> DBusType? {
        guard let first = bytes.popFirst() else { return nil }
        switch Int32(first) {
        case CDBus_TYPE_BYTE: return .byte
        case CDBus_TYPE_BOOLEAN: return .boolean
        case CDBus_TYPE_INT16: return .int16
        case CDBus_TYPE_UINT16: return .uint16
        case CDBus_TYPE_INT32: return .int32
        case CDBus_TYPE_UINT32: return .uint32
        case CDBus_TYPE_INT64: return .int64
        case CDBus_TYPE_UINT64: return .uint64
        case CDBus_TYPE_DOUBLE: return .double
        case CDBus_TYPE_STRING: return .string
        case CDBus_TYPE_OBJECT_PATH: return .objectPath
        case CDBus_TYPE_SIGNATURE: return .signature
        case CDBus_TYPE_UNIX_FD: return .unixFD
        case CDBus_TYPE_VARIANT: return .variant
        case CDBus_TYPE_ARRAY:
            if bytes.first == UInt8(ascii: "{") {
                bytes.removeFirst()
                guard let key = parseOne(&bytes), let value = parseOne(&bytes),
                    bytes.popFirst() == UInt8(ascii: "}")
                else { return nil }
                return .dictionary(key: key, value: value)
            }
            guard let element = parseOne(&bytes) else { return nil }
            return .array(element)
        case Int32(UInt8(ascii: "(")):
            var fields: [DBusType] = []
            while let next = bytes.first, next != UInt8(ascii: ")") {
                guard let field = parseOne(&bytes) else { return nil }
                fields.append(field)
            }
            guard bytes.popFirst() == UInt8(ascii: ")"), !fields.isEmpty else { return nil }
            return .structure(fields)
        default:
            return nil
        }
    }
}
