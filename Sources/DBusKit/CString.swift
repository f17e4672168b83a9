import Glibc

extension String {
    /// Compares with a C string without building a Swift string from it.
    func equals(_ cString: UnsafePointer<CChar>) -> Bool {
        withCString { strcmp($0, cString) == 0 }
    }
}

/// A caller's name as an error message may quote it: at most `limit` bytes are read,
/// bytes outside printable ASCII are written `\xNN`, and a longer name ends in "…".
/// A 30 MiB name then costs what a short one does.
public func quotedName(_ name: UnsafePointer<CChar>, limit: Int = 255) -> String {
    let length = strnlen(name, limit + 1)
    var text = ""
    text.reserveCapacity(min(length, limit) + 8)
    for index in 0..<min(length, limit) {
        let byte = UInt8(bitPattern: name[index])
        if byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") {
            text.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
            let hex = String(byte, radix: 16)
            text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
        }
    }
    return length > limit ? text + "…" : text
}
