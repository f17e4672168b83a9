extension DBusValue {
    /// An upper bound of the bytes this value takes in a message body (alignment
    /// padding included), computed without building the message.
    public var wireSizeBound: Int {
        switch self {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .unixFD: 8
        case .int64, .uint64, .double: 16
        case .string(let text), .objectPath(let text): 8 + text.utf8.count + 1
        case .signature(let text): 1 + text.utf8.count + 1
        case .array(_, let elements): elements.reduce(16) { $0 + $1.wireSizeBound }
        case .dictionary(_, _, let entries):
            entries.reduce(16) { $0 + 8 + $1.key.wireSizeBound + $1.value.wireSizeBound }
        case .structure(let fields): fields.reduce(8) { $0 + $1.wireSizeBound }
        case .variant(let inner): 1 + 255 + 1 + inner.wireSizeBound
        }
    }
}
