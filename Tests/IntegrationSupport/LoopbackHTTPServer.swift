import Foundation

/// Tests/HTTPCheckTests/server.py on 127.0.0.1: it answers by path (204, 302, hang, …) and
/// prints each request it heard as one JSON line, which `readLine` hands over.
public final class LoopbackHTTPServer {
    public private(set) var port = ""
    private let process = Process()
    private let output: FileHandle
    private var buffered = Data()

    /// `arguments`: server.py's options (`--tls CERT KEY`, `--capport-file F`, …).
    public init(_ arguments: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: Paths.python)
        process.arguments = [Paths.repository.appendingPathComponent("Tests/HTTPCheckTests/server.py").path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        output = pipe.fileHandleForReading
        guard let first = readLine() else { throw NSError(domain: "server.py printed no port", code: 1) }
        port = first
    }

    /// The next line the server printed, waiting for it; nil once it has exited.
    public func readLine() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: 0x0A) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeSubrange(...newline)
                return line
            }
            let chunk = output.availableData
            if chunk.isEmpty { return nil }
            buffered.append(chunk)
        }
    }

    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }

    /// A test CA and a server certificate for `san` (openssl's form: `DNS:check.test,IP:127.0.0.1`) in a new
    /// directory: ca.pem, server.pem, server.key, and rogue.pem/rogue.key that no one trusts.
    public static func makeCertificates(san: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "netobserver-ca-\(UUID().uuidString)")
        let script = Paths.repository.appendingPathComponent("Tests/HTTPCheckTests/make_test_ca.sh").path
        let process = try Process.run(URL(fileURLWithPath: "/bin/sh"), arguments: [script, directory.path, san])
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw NSError(domain: "make_test_ca.sh failed", code: 1) }
        return directory
    }
}
