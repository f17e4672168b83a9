/// RFC 8259 JSON, read strictly from bytes a network handed us: valid UTF-8 only, no comments,
/// no trailing commas, no leading zeros, no control characters in strings, no duplicate names
/// in an object (which one would a reader believe?), at most `deepest` levels of nesting.
/// Numbers are kept as their text; the caller reads the ones it wants.
public enum JSONValue: Equatable, Sendable {
    case object([(String, JSONValue)])
    case array([JSONValue])
    case string(String)
    case number(String)
    case bool(Bool)
    case null

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.array(let x), .array(let y)): x == y
        case (.string(let x), .string(let y)), (.number(let x), .number(let y)): x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.null, .null): true
        default: false
        }
    }

    /// The member `name` of an object; nil for anything else or when absent.
    public subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }
}

public enum StrictJSON {
    public static let deepest = 16

    public struct Malformed: Error, Equatable, Sendable {
        public let text: String

        public init(text: String) {
            self.text = text
        }
    }

    public static func parse(_ bytes: [UInt8]) -> Result<JSONValue, Malformed> {
        var reader = Reader(bytes: bytes)
        do throws(Malformed) {
            reader.skipSpace()
            let value = try reader.value(depth: 0)
            reader.skipSpace()
            guard reader.offset == bytes.count else { throw reader.malformed("text after the value") }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        func malformed(_ what: String) -> Malformed { Malformed(text: "\(what) at byte \(offset)") }

        var next: UInt8? { offset < bytes.count ? bytes[offset] : nil }

        mutating func skipSpace() {
            while let byte = next, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { offset += 1 }
        }

        mutating func expect(_ word: String) throws(Malformed) {
            for byte in word.utf8 {
                guard next == byte else { throw malformed("not a JSON value") }
                offset += 1
            }
        }

        mutating func value(depth: Int) throws(Malformed) -> JSONValue {
            guard depth < StrictJSON.deepest else { throw malformed("nested deeper than \(StrictJSON.deepest)") }
            switch next {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            case let byte? where byte == UInt8(ascii: "-") || (0x30...0x39).contains(byte): return .number(try number())
            case nil: throw malformed("the text ends where a value should be")
            default: throw malformed("not a JSON value")
            }
        }

        mutating func object(depth: Int) throws(Malformed) -> JSONValue {
            offset += 1
            var members: [(String, JSONValue)] = []
            skipSpace()
            if next == UInt8(ascii: "}") {
                offset += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard next == UInt8(ascii: "\"") else { throw malformed("an object's name is not a string") }
                let name = try string()
                guard !members.contains(where: { $0.0 == name }) else {
                    throw malformed("the name \"\(name.prefix(40))\" twice")
                }
                skipSpace()
                guard next == UInt8(ascii: ":") else { throw malformed("no colon after a name") }
                offset += 1
                skipSpace()
                members.append((name, try value(depth: depth + 1)))
                skipSpace()
                switch next {
                case UInt8(ascii: ","): offset += 1
                case UInt8(ascii: "}"): offset += 1; return .object(members)
                default: throw malformed("an object goes on without a comma or a closing brace")
                }
            }
        }

        mutating func array(depth: Int) throws(Malformed) -> JSONValue {
            offset += 1
            var elements: [JSONValue] = []
            skipSpace()
            if next == UInt8(ascii: "]") {
                offset += 1
                return .array(elements)
            }
            while true {
                skipSpace()
                elements.append(try value(depth: depth + 1))
                skipSpace()
                switch next {
                case UInt8(ascii: ","): offset += 1
                case UInt8(ascii: "]"): offset += 1; return .array(elements)
                default: throw malformed("an array goes on without a comma or a closing bracket")
                }
            }
        }

        mutating func number() throws(Malformed) -> String {
            let start = offset
            if next == UInt8(ascii: "-") { offset += 1 }
            guard let first = next, (0x30...0x39).contains(first) else { throw malformed("a number without digits") }
            offset += 1
            if first == 0x30, let byte = next, (0x30...0x39).contains(byte) {
                throw malformed("a number with a leading zero")
            }
            skipDigits()
            if next == UInt8(ascii: ".") {
                offset += 1
                guard try digits() else { throw malformed("no digits after a decimal point") }
            }
            if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
                offset += 1
                if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { offset += 1 }
                guard try digits() else { throw malformed("no digits in an exponent") }
            }
            return String(decoding: bytes[start..<offset], as: UTF8.self)
        }

        mutating func skipDigits() {
            while let byte = next, (0x30...0x39).contains(byte) { offset += 1 }
        }

        mutating func digits() throws(Malformed) -> Bool {
            let start = offset
            skipDigits()
            return offset > start
        }

        mutating func string() throws(Malformed) -> String {
            offset += 1
            var scalars = String.UnicodeScalarView()
            while true {
                guard let byte = next else { throw malformed("a string without its closing quote") }
                switch byte {
                case UInt8(ascii: "\""):
                    offset += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    offset += 1
                    scalars.append(try escape())
                case 0..<0x20:
                    throw malformed("a control character in a string")
                case 0..<0x80:
                    scalars.append(Unicode.Scalar(byte))
                    offset += 1
                default:
                    scalars.append(try utf8Scalar())
                }
            }
        }

        mutating func escape() throws(Malformed) -> Unicode.Scalar {
            guard let byte = next else { throw malformed("a string ends in an escape") }
            offset += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let unit = try hex4()
                if (0xD800..<0xDC00).contains(unit) {
                    guard next == UInt8(ascii: "\\") else { throw malformed("a lone surrogate") }
                    offset += 1
                    guard next == UInt8(ascii: "u") else { throw malformed("a lone surrogate") }
                    offset += 1
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw malformed("a lone surrogate") }
                    let value = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    guard let scalar = Unicode.Scalar(value) else { throw malformed("a bad surrogate pair") }
                    return scalar
                }
                guard let scalar = Unicode.Scalar(unit) else { throw malformed("a lone surrogate") }
                return scalar
            default:
                throw malformed("an unknown escape")
            }
        }

        mutating func hex4() throws(Malformed) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = next else { throw malformed("a short \\u escape") }
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x41 + 10
                case 0x61...0x66: digit = byte - 0x61 + 10
                default: throw malformed("a bad \\u escape")
                }
                value = value << 4 | UInt32(digit)
                offset += 1
            }
            return value
        }

        /// One scalar of 2 to 4 bytes, as RFC 3629 allows them (no overlong forms, no surrogates, none past U+10FFFF).
        mutating func utf8Scalar() throws(Malformed) -> Unicode.Scalar {
            let lead = bytes[offset]
            let (count, minimum, initial): (Int, UInt32, UInt32) =
                switch lead {
                case 0xC2...0xDF: (2, 0x80, UInt32(lead & 0x1F))
                case 0xE0...0xEF: (3, 0x800, UInt32(lead & 0x0F))
                case 0xF0...0xF4: (4, 0x10000, UInt32(lead & 0x07))
                default: (0, 0, 0)
                }
            guard count > 0, offset + count <= bytes.count else { throw malformed("text that is not UTF-8") }
            var value = initial
            for index in 1..<count {
                let byte = bytes[offset + index]
                guard byte & 0xC0 == 0x80 else { throw malformed("text that is not UTF-8") }
                value = value << 6 | UInt32(byte & 0x3F)
            }
            guard value >= minimum, value <= 0x10FFFF, !(0xD800..<0xE000).contains(value),
                let scalar = Unicode.Scalar(value)
            else { throw malformed("text that is not UTF-8") }
            offset += count
            return scalar
        }
    }
}
