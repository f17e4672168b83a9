import CLinux
import Glibc
import Synchronization

/// Carries values from any thread to a handler on the loop, through an eventfd.
public final class LoopChannel<Value: Sendable> {
    /// The thread-safe end: hand it to workers.
    public final class Sender: Sendable {
        fileprivate let descriptor: Descriptor
        fileprivate let queue = Mutex<[Value]>([])

        fileprivate init(_ descriptor: consuming Descriptor) { self.descriptor = descriptor }

        public func send(_ value: Value) {
            queue.withLock { $0.append(value) }
            var one: UInt64 = 1
            _ = try? Syscall.retrying("write(eventfd)") { write(descriptor.raw, &one, 8) }
        }
    }

    public let sender: Sender
    private let source: IOSource
    private let loop: MainLoop

    public init(loop: MainLoop, handler: @escaping (Value) -> Void) throws(SystemError) {
        let sender = Sender(try Syscall.descriptor("eventfd") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) })
        let fd = sender.descriptor.raw
        self.sender = sender
        self.loop = loop
        source = try loop.watch(fd: fd, interest: .readable) { _ in
            var count: UInt64 = 0
            _ = try? Syscall.retrying("read(eventfd)") { read(fd, &count, 8) }
            let values = sender.queue.withLock { queue in
                let taken = queue
                queue.removeAll()
                return taken
            }
            for value in values { handler(value) }
        }
    }

    deinit {
        // The descriptor closes with the Sender, once no worker holds it.
        loop.remove(source)
    }
}
