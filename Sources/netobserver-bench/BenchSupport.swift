import CLinux
import EventLoop
import Glibc
import NetCore
import Probe
import Reachability

func shell(_ command: String) {
    if system(command + " >/dev/null 2>&1") != 0 { fatalError("failed: \(command)") }
}

/// Writes `text` to `path` whole: to a file beside it, then renamed over it (a reader sees the old or the new).
func writeFile(_ path: String, _ text: String) {
    guard let file = fopen(path + ".new", "w") else { return }
    fputs(text, file)
    fclose(file)
    rename(path + ".new", path)
}

/// What `command` printed on standard output.
func commandText(_ command: String) -> String {
    guard let pipe = popen(command, "r") else { return "" }
    defer { pclose(pipe) }
    var text = ""
    var buffer = [CChar](repeating: 0, count: 512)
    while fgets(&buffer, Int32(buffer.count), pipe) != nil {
        text += String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    return text
}

/// The first line `command` printed, without its newline.
func firstLine(of command: String) -> String {
    String(commandText(command).prefix { $0 != "\n" })
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)]
}

func report(_ name: String, _ microseconds: [Double]) {
    print(
        "reachability \(name): n=\(microseconds.count) median_us=\(Int(percentile(microseconds, 0.5)))"
            + " p99_us=\(Int(percentile(microseconds, 0.99))) max_us=\(Int(microseconds.max() ?? 0))")
}

func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func residentKilobytes() -> Int {
    let fd = open("/proc/self/statm", O_RDONLY)
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let n = read(fd, &buffer, buffer.count)
    let fields = String(decoding: buffer[..<max(0, n)], as: UTF8.self).split(separator: " ")
    return (Int(fields.count > 1 ? fields[1] : "0") ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

/// Runs `body` with this thread in the namespace `name`.
func inNamespace<T>(_ name: String, _ body: () throws -> T) rethrows -> T {
    let original = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
    let target = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
    precondition(CLinux_enter_network_namespace(target) == 0, "setns")
    defer {
        _ = CLinux_enter_network_namespace(original)
        close(original)
        close(target)
    }
    return try body()
}

func fixed(_ value: Double, _ digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((value * scale).rounded())
    let whole = scaled / Int(scale)
    let fraction = String(abs(scaled) % Int(scale))
    return digits == 0 ? "\(whole)" : "\(whole)." + String(repeating: "0", count: digits - fraction.count) + fraction
}
