// swift-tools-version:6.0
import PackageDescription

// The parsers' fuzzers (rtnetlink, router advertisements' options, ICMP replies, sock_diag, the captive-portal API's JSON, the history file, numeric addresses), apart from the main package because
// libFuzzer brings its own main: `make fuzz` builds them with -sanitize=fuzzer,address
// -parse-as-library over the real modules, as Fuzz/dbus does the D-Bus surface.
let package = Package(
    name: "netobserver-parser-fuzz",
    dependencies: [.package(name: "netobserver", path: "../..")],
    targets: [
        .executableTarget(name: "ParserFuzzer", dependencies: [
            .product(name: "ReachabilityRules", package: "netobserver"),
            .product(name: "ProbeRules", package: "netobserver"),
            .product(name: "MonitorRules", package: "netobserver"),
            .product(name: "Timekeeping", package: "netobserver"),
            .product(name: "NetAddress", package: "netobserver"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
