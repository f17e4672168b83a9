import Glibc

/// Writes one line straight to a descriptor: no stdio buffer to flush, whole lines to pipes.
func writeLine(_ text: String, to fd: Int32 = 1, terminator: String = "\n") {
    let bytes = Array((text + terminator).utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written <= 0 { return }
        offset += written
    }
}
