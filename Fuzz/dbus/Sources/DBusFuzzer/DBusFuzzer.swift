// libFuzzer entry for the D-Bus surface: arbitrary bytes, demarshalled by libdbus,
// through the real ObjectServer dispatch. Built by `make fuzz` (this package, with
// -sanitize=fuzzer,address -parse-as-library); crash inputs are replayed by `make test`.
import DBusFuzzHarness

typealias Arguments = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

/// libFuzzer's driver, for programs whose `main` is their own.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<Arguments?>,
                     _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

// SwiftPM links an executable target with main = <target>_main, so libFuzzer's main never runs.
@_cdecl("DBusFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: Arguments?) -> CInt {
    DBusFuzzHarness.warmUp()
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in
        guard let data else { return 0 }
        DBusFuzzHarness.run(Array(UnsafeBufferPointer(start: data, count: size)))
        return 0
    }
}
