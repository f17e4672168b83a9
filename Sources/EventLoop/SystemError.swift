import Glibc

/// A failed system call: which call, and the errno it left.
public struct SystemError: Error, CustomStringConvertible, Sendable, Equatable {
    public let call: String
    public let errno: Int32

    public init(_ call: String, errno: Int32 = Glibc.errno) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        "\(call): \(String(cString: strerror(errno)))"
    }
}
