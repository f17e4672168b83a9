import Glibc

/// An open file descriptor with one owner: closed exactly once, when the owner lets it
/// go. It cannot be copied, so no two owners can close it, and none can forget to.
public struct Descriptor: ~Copyable, Sendable {
    public let raw: Int32

    /// Takes ownership of `raw`, an open descriptor.
    public init(owning raw: Int32) {
        self.raw = raw
    }

    deinit {
        // Linux releases the descriptor even when close fails (EINTR included): never retried.
        _ = Glibc.close(raw)
    }

    /// Closes now and says whether the kernel reported an error (a file's last write may).
    public consuming func close() throws(SystemError) {
        let raw = self.raw
        discard self
        guard Glibc.close(raw) == 0 else { throw SystemError("close") }
    }
}

/// System calls as the rest of the code makes them: interrupted calls are made again,
/// failures become a `SystemError` carrying errno, new descriptors come owned.
public enum Syscall {
    /// Calls `body` again while it fails with EINTR; a negative result throws `call`'s errno.
    @discardableResult
    public static func retrying<Result: BinaryInteger>(
        _ call: String, _ body: () -> Result
    ) throws(SystemError) -> Result {
        while true {
            let result = body()
            if result >= 0 { return result }
            guard errno == EINTR else { throw SystemError(call) }
        }
    }

    /// A descriptor from `body` (socket, eventfd, open, …), owned.
    public static func descriptor(_ call: String, _ body: () -> Int32) throws(SystemError) -> Descriptor {
        Descriptor(owning: try retrying(call, body))
    }
}
