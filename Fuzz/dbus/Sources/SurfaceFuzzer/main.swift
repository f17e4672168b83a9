// libFuzzer entry for every surface (FUZZ_SURFACE=dbus|statefile|validators|client|follower|helper):
// arbitrary bytes through the same harness the replay tests use. Built by `make fuzz` (this
// package, with -sanitize=fuzzer,address -parse-as-library: libFuzzer brings its own main);
// crash inputs land in Fuzz/<surface>/crashes and `make test` replays them.
import DBusFuzzHarness
import Glibc

typealias Arguments = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<Arguments?>,
                     _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

nonisolated(unsafe) var surface = FuzzSurface.statefile

@_cdecl("SurfaceFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: Arguments?) -> CInt {
    guard let name = getenv("FUZZ_SURFACE").map({ String(cString: $0) }), let chosen = FuzzSurface(rawValue: name) else {
        let usage = "set FUZZ_SURFACE to one of: \(FuzzSurface.allCases.map(\.rawValue).joined(separator: ", "))\n"
        _ = usage.withCString { write(2, $0, strlen($0)) }
        return 2
    }
    surface = chosen
    if chosen == .dbus { DBusFuzzHarness.warmUp() }
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in
        guard let data else { return 0 }
        surface.run(Array(UnsafeBufferPointer(start: data, count: size)))
        return 0
    }
}
