// The parsers' fuzzer (a package of its own, built with -sanitize=fuzzer,address
// -parse-as-library: libFuzzer brings its own main); FUZZ_PARSER picks the parser.
import Glibc

typealias Arguments = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<Arguments?>,
                     _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@_cdecl("ParserFuzzer_main")
func fuzzerMain(_ argc: CInt, _ argv: Arguments?) -> CInt {
    let parsers: [String: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt] = [
        "netlink": { data, size in data.map { netlinkFuzzerTestOneInput($0, size) } ?? 0 },
        "echo": { data, size in data.map { echoFuzzerTestOneInput($0, size) } ?? 0 },
        "sockdiag": { data, size in data.map { socketDiagFuzzerTestOneInput($0, size) } ?? 0 },
        "router": { data, size in data.map { routerOptionsFuzzerTestOneInput($0, size) } ?? 0 },
        "capport": { data, size in data.map { capportFuzzerTestOneInput($0, size) } ?? 0 },
        "history": { data, size in data.map { historyFuzzerTestOneInput($0, size) } ?? 0 },
        "address": { data, size in data.map { addressFuzzerTestOneInput($0, size) } ?? 0 },
    ]
    guard let name = getenv("FUZZ_PARSER").map({ String(cString: $0) }), let parser = parsers[name] else {
        let usage = "set FUZZ_PARSER to one of: \(parsers.keys.sorted().joined(separator: ", "))\n"
        _ = usage.withCString { write(2, $0, strlen($0)) }
        return 2
    }
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, parser)
}
