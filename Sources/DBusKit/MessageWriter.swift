import CDBus

/// Appends typed values to a message through libdbus's iterators.
enum MessageWriter {
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values {
            try check(value)
            if value.isContainer {
                guard value.type.signature.utf8.count <= 255 else { throw .invalidArgs("signature too long") }
            }
            try append(value, to: &iter)
        }
    }

    /// Verifies the whole value before anything is appended, so a bad value
    /// leaves no half-written container behind.
    static func check(_ value: DBusValue) throws(DBusError) {
        switch value {
        case .string(let s):
            guard Validation.isValidString(s) else { throw .invalidArgs("string contains a NUL byte") }
        case .objectPath(let s):
            guard Validation.isValidObjectPath(s) else { throw .invalidArgs("invalid object path") }
        case .signature(let s):
            guard Validation.isValidSignature(s) else { throw .invalidArgs("invalid signature") }
        case .array(let element, let items):
            for item in items {
                guard item.type == element else {
                    throw .invalidArgs("array of \(element.signature) holds a \(item.type.signature)")
                }
                try check(item)
            }
        case .dictionary(let keyType, let valueType, let entries):
            guard keyType.isBasic else { throw .invalidArgs("dictionary key must be a basic type") }
            for entry in entries {
                guard entry.key.type == keyType, entry.value.type == valueType else {
                    throw .invalidArgs("dictionary a{\(keyType.signature)\(valueType.signature)} holds a wrong entry")
                }
                try check(entry.key)
                try check(entry.value)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .invalidArgs("empty structure") }
            for field in fields { try check(field) }
        case .variant(let inner):
            try check(inner)
        default:
            break
        }
    }

    private static func appendBasic<T: BitwiseCopyable>(
        _ code: Int32, _ value: T, to iter: inout DBusMessageIter
    ) throws(DBusError) {
        var copy = value
        guard dbus_message_iter_append_basic(&iter, code, &copy) != 0 else { throw .failed("out of memory") }
    }

    private static func appendString(_ code: Int32, _ s: String, to iter: inout DBusMessageIter) throws(DBusError) {
        let ok = s.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return dbus_message_iter_append_basic(&iter, code, &pointer)
        }
        guard ok != 0 else { throw .failed("out of memory") }
    }

    private static func container(
        _ code: Int32, _ signature: String?, in iter: inout DBusMessageIter,
        _ body: (inout DBusMessageIter) throws(DBusError) -> Void
    ) throws(DBusError) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, code, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, code, nil, &sub)
        }
        guard opened != 0 else { throw .failed("out of memory") }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iter, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &sub) != 0 else { throw .failed("out of memory") }
    }

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) throws(DBusError) {
        switch value {
        case .byte(let v): try appendBasic(CDBus_TYPE_BYTE, v, to: &iter)
        case .boolean(let v): try appendBasic(CDBus_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0), to: &iter)
        case .int16(let v): try appendBasic(CDBus_TYPE_INT16, v, to: &iter)
        case .uint16(let v): try appendBasic(CDBus_TYPE_UINT16, v, to: &iter)
        case .int32(let v): try appendBasic(CDBus_TYPE_INT32, v, to: &iter)
        case .uint32(let v): try appendBasic(CDBus_TYPE_UINT32, v, to: &iter)
        case .int64(let v): try appendBasic(CDBus_TYPE_INT64, v, to: &iter)
        case .uint64(let v): try appendBasic(CDBus_TYPE_UINT64, v, to: &iter)
        case .double(let v): try appendBasic(CDBus_TYPE_DOUBLE, v, to: &iter)
        case .unixFD(let v): try appendBasic(CDBus_TYPE_UNIX_FD, v, to: &iter)
        case .string(let s): try appendString(CDBus_TYPE_STRING, s, to: &iter)
        case .objectPath(let s): try appendString(CDBus_TYPE_OBJECT_PATH, s, to: &iter)
        case .signature(let s): try appendString(CDBus_TYPE_SIGNATURE, s, to: &iter)
        case .array(let element, let items):
            try container(CDBus_TYPE_ARRAY, element.signature, in: &iter) {
                (sub: inout DBusMessageIter) throws(DBusError) in
                for item in items { try append(item, to: &sub) }
            }
        case .dictionary(let keyType, let valueType, let entries):
            let entrySignature = "{" + keyType.signature + valueType.signature + "}"
            try container(CDBus_TYPE_ARRAY, entrySignature, in: &iter) {
                (sub: inout DBusMessageIter) throws(DBusError) in
                for entry in entries {
                    try container(CDBus_TYPE_DICT_ENTRY, nil, in: &sub) {
                        (pair: inout DBusMessageIter) throws(DBusError) in
                        try append(entry.key, to: &pair)
                        try append(entry.value, to: &pair)
                    }
                }
            }
        case .structure(let fields):
            try container(CDBus_TYPE_STRUCT, nil, in: &iter) { (sub: inout DBusMessageIter) throws(DBusError) in
                for field in fields { try append(field, to: &sub) }
            }
        case .variant(let inner):
            try container(CDBus_TYPE_VARIANT, inner.type.signature, in: &iter) {
                (sub: inout DBusMessageIter) throws(DBusError) in
                try append(inner, to: &sub)
            }
        }
    }
}
