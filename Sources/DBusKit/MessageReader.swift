import CDBus

/// Reads a message's arguments as typed values. libdbus has validated the
/// wire data on receipt; anything it still cannot describe is an InvalidArgs.
enum MessageReader {
    static func read(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iter) != CDBus_TYPE_INVALID {
            values.append(try readValue(&iter))
            dbus_message_iter_next(&iter)
        }
        return values
    }

    /// Moves a fresh iterator to the argument at `index`; false when there are fewer.
    private static func seek(_ iter: inout DBusMessageIter, to index: Int, in message: OpaquePointer) -> Bool {
        guard dbus_message_iter_init(message, &iter) != 0 else { return false }
        for _ in 0..<index {
            guard dbus_message_iter_next(&iter) != 0 else { return false }
        }
        return true
    }

    /// Calls `body` with the string argument at `index`, in libdbus's own buffer (valid during the call).
    static func withString<R>(at index: Int, in message: OpaquePointer, _ body: (UnsafePointer<CChar>) -> R) -> R? {
        var iter = DBusMessageIter()
        guard seek(&iter, to: index, in: message), dbus_message_iter_get_arg_type(&iter) == CDBus_TYPE_STRING else {
            return nil
        }
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map(body)
    }

    /// The first two arguments when both are strings, in libdbus's own buffer, in one pass.
    static func twoStrings(in message: OpaquePointer) -> (UnsafePointer<CChar>, UnsafePointer<CChar>)? {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0, dbus_message_iter_get_arg_type(&iter) == CDBus_TYPE_STRING
        else { return nil }
        var first: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &first)
        guard dbus_message_iter_next(&iter) != 0, dbus_message_iter_get_arg_type(&iter) == CDBus_TYPE_STRING else {
            return nil
        }
        var second: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &second)
        guard let first, let second else { return nil }
        return (first, second)
    }

    static func uint32(at index: Int, in message: OpaquePointer) -> UInt32? {
        var iter = DBusMessageIter()
        guard seek(&iter, to: index, in: message), dbus_message_iter_get_arg_type(&iter) == CDBus_TYPE_UINT32 else {
            return nil
        }
        return basic(&iter, UInt32(0))
    }

    /// What the variant argument at `index` holds, read only after its signature
    /// equals `expected`: a larger or nested value is refused undecoded.
    static func variant(at index: Int, in message: OpaquePointer, expected: DBusType) throws(DBusError) -> DBusValue {
        var iter = DBusMessageIter()
        guard seek(&iter, to: index, in: message), dbus_message_iter_get_arg_type(&iter) == CDBus_TYPE_VARIANT else {
            throw .invalidArgs("no variant argument")
        }
        var inner = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &inner)
        let code = dbus_message_iter_get_arg_type(&inner)
        guard code != CDBus_TYPE_VARIANT else {
            throw .invalidArgs("a variant holding another variant is not accepted")
        }
        let signature = try signature(&inner)
        guard signature == expected.signature else {
            throw .invalidArgs("expected a value of type '\(expected.signature)', not '\(signature)'")
        }
        return try readValue(&inner)
    }

    private static func signature(_ iter: inout DBusMessageIter) throws(DBusError) -> String {
        guard let raw = dbus_message_iter_get_signature(&iter) else { throw .failed("out of memory") }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    private static func basic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var value = initial
        dbus_message_iter_get_basic(&iter, &value)
        return value
    }

    private static func string(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        guard let pointer else { return "" }
        return String(cString: pointer)
    }

    /// The full signature of the value under the iterator.
    private static func currentType(_ iter: inout DBusMessageIter) throws(DBusError) -> DBusType {
        guard let type = DBusType.parseSingle(signature: try signature(&iter)) else {
            throw .invalidArgs("unreadable signature")
        }
        return type
    }

    private static func readValue(_ iter: inout DBusMessageIter) throws(DBusError) -> DBusValue {
        let code = dbus_message_iter_get_arg_type(&iter)
        switch code {
        case CDBus_TYPE_BYTE: return .byte(basic(&iter, UInt8(0)))
        case CDBus_TYPE_BOOLEAN: return .boolean(basic(&iter, dbus_bool_t(0)) != 0)
        case CDBus_TYPE_INT16: return .int16(basic(&iter, Int16(0)))
        case CDBus_TYPE_UINT16: return .uint16(basic(&iter, UInt16(0)))
        case CDBus_TYPE_INT32: return .int32(basic(&iter, Int32(0)))
        case CDBus_TYPE_UINT32: return .uint32(basic(&iter, UInt32(0)))
        case CDBus_TYPE_INT64: return .int64(basic(&iter, Int64(0)))
        case CDBus_TYPE_UINT64: return .uint64(basic(&iter, UInt64(0)))
        case CDBus_TYPE_DOUBLE: return .double(basic(&iter, Double(0)))
        case CDBus_TYPE_UNIX_FD:
            // Reading one would hand us a duplicate to close; nothing here takes descriptors.
            throw .invalidArgs("file descriptors are not accepted")
        case CDBus_TYPE_STRING: return .string(string(&iter))
        case CDBus_TYPE_OBJECT_PATH: return .objectPath(string(&iter))
        case CDBus_TYPE_SIGNATURE: return .signature(string(&iter))
        case CDBus_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            return .variant(try readValue(&sub))
        case CDBus_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            var fields: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != CDBus_TYPE_INVALID {
                fields.append(try readValue(&sub))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case CDBus_TYPE_ARRAY:
            let type = try currentType(&iter)
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &sub)
            switch type {
            case .dictionary(let keyType, let valueType):
                var entries: [DBusDictEntry] = []
                while dbus_message_iter_get_arg_type(&sub) == CDBus_TYPE_DICT_ENTRY {
                    var pair = DBusMessageIter()
                    dbus_message_iter_recurse(&sub, &pair)
                    let key = try readValue(&pair)
                    guard dbus_message_iter_next(&pair) != 0 else {
                        throw .invalidArgs("dictionary entry without a value")
                    }
                    let value = try readValue(&pair)
                    entries.append(DBusDictEntry(key: key, value: value))
                    dbus_message_iter_next(&sub)
                }
                return .dictionary(key: keyType, value: valueType, entries)
            case .array(let element):
                var items: [DBusValue] = []
                while dbus_message_iter_get_arg_type(&sub) != CDBus_TYPE_INVALID {
                    items.append(try readValue(&sub))
                    dbus_message_iter_next(&sub)
                }
                return .array(element, items)
            default:
                throw .invalidArgs("unreadable array")
            }
        default:
            throw .invalidArgs("unknown type code \(code)")
        }
    }
}
