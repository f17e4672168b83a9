/// A typed D-Bus value. Arrays and dictionaries carry their element types so
/// that empty ones still have a signature.
public enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor. Read from a message, it is a new descriptor the reader owns.
    case unixFD(Int32)
    case array(DBusType, [DBusValue])
    case dictionary(key: DBusType, value: DBusType, [DBusDictEntry])
    case structure([DBusValue])
    /// The only recursive case: the others hold arrays, which are references already,
    /// so a string or a number is stored inline instead of in a box of its own.
    indirect case variant(DBusValue)

    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        case .variant: .variant
        }
    }

    /// An array, dictionary or structure: the only values whose signature can grow long.
    var isContainer: Bool {
        switch self {
        case .array, .dictionary, .structure: true
        default: false
        }
    }

    /// A string-keyed dictionary of variants, the `a{sv}` of property maps.
    public static func variantMap(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(
            key: .string, value: .variant,
            entries.map { DBusDictEntry(key: .string($0.0), value: .variant($0.1)) })
    }

    /// An `a{sv}` read back: each value taken out of its variant; nil for another type.
    public var propertyMap: [String: DBusValue]? {
        guard case .dictionary(.string, .variant, let entries) = self else { return nil }
        var map: [String: DBusValue] = [:]
        for entry in entries {
            guard let name = entry.key.stringValue else { continue }
            map[name] = entry.value.unwrappedVariant
        }
        return map
    }

    public static func stringArray(_ strings: [String]) -> DBusValue {
        .array(.string, strings.map { .string($0) })
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var uint32Value: UInt32? {
        if case .uint32(let v) = self { return v }
        return nil
    }

    public var boolValue: Bool? {
        if case .boolean(let v) = self { return v }
        return nil
    }

    public var doubleValue: Double? {
        if case .double(let v) = self { return v }
        return nil
    }

    /// The value inside a variant (or the value itself when it is not one).
    public var unwrappedVariant: DBusValue {
        if case .variant(let inner) = self { return inner.unwrappedVariant }
        return self
    }
}

public struct DBusDictEntry: Hashable, Sendable {
    public var key: DBusValue
    public var value: DBusValue

    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}
