// swift-tools-version:6.0
import PackageDescription

// The D-Bus fuzzer, apart from the main package because libFuzzer brings its own
// main: `make fuzz` builds it with -sanitize=fuzzer,address -parse-as-library.
let package = Package(
    name: "netobserver-dbus-fuzz",
    dependencies: [.package(name: "netobserver", path: "../..")],
    targets: [
        .executableTarget(name: "SurfaceFuzzer", dependencies: [.product(name: "DBusFuzzHarness", package: "netobserver")]),
    ],
    swiftLanguageModes: [.v6]
)
