// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "netobserver",
    products: [
        .executable(name: "netobserverd", targets: ["netobserverd"]),
        .executable(name: "netobserver", targets: ["netobserver"]),
        // For the fuzzers' own packages (Fuzz/dbus, Fuzz/parsers).
        .library(name: "DBusFuzzHarness", targets: ["DBusFuzzHarness"]),
        .library(name: "ReachabilityRules", targets: ["ReachabilityRules"]),
        .library(name: "ProbeRules", targets: ["ProbeRules"]),
        .library(name: "MonitorRules", targets: ["MonitorRules"]),
        .library(name: "Timekeeping", targets: ["Timekeeping"]),
        .library(name: "NetAddress", targets: ["NetAddress"]),
    ],
    targets: [
        // libdbus-1, with a shim header for what Swift's importer cannot see.
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // libcurl, loaded on first use (dlopen), with typed wrappers for its variadic setopt/getinfo.
        .target(name: "CCurl"),
        // A single-threaded epoll loop: fd sources, timers, end-of-turn work, cross-thread posts.
        // Linux headers and macros Swift cannot import (epoll, eventfd, signalfd, later netlink/ICMP).
        .target(name: "CLinux"),
        // glibc's resolver library (libresolv): DNS truth's questions asked and their answers read, no DNS code of ours.
        .target(name: "CResolv", linkerSettings: [.linkedLibrary("resolv")]),
        .target(name: "EventLoop", dependencies: ["CLinux", "Timekeeping"]),
        // The pure targets: the rules without I/O. Each depends only on pure targets (no C module, no
        // EventLoop, no DBusKit, no HTTPCheck); `make purity` also refuses an `import Glibc` in them.
        // IP addresses as bytes: their text form, their classes.
        .target(name: "NetAddress"),
        // Time as types: an Instant on the loop's clock, a Duration between two.
        .target(name: "Timekeeping"),
        // The probes' rules: echo packets, the tracker, the verdict, ProbeCore, traffic as evidence, the lookup queue.
        .target(name: "ProbeRules", dependencies: ["NetAddress", "Timekeeping"]),
        // The reachability evaluation: the kernel's tables as parsed messages, the verdict, ReachabilityCore.
        .target(name: "ReachabilityRules", dependencies: ["NetAddress", "Timekeeping"]),
        // One target's whole verdict: MonitorCore, TargetCore, StatusRules, the HTTP check's rules, link facts.
        .target(name: "MonitorRules", dependencies: ["NetAddress", "ProbeRules", "ReachabilityRules", "Timekeeping"]),

        // Addresses read from text (inet_pton) and sockets, shared by both engines.
        .target(name: "NetCore", dependencies: ["NetAddress"]),
        // rtnetlink: links, addresses, routes, the kernel's route to the host, the interface kind;
        // sock_diag: this machine's own TCP connections as traffic evidence.
        .target(name: "Reachability", dependencies: ["CLinux", "EventLoop", "NetCore", "ReachabilityRules", "NetAddress", "Timekeeping"]),
        // sock_diag: this machine's TCP connections as traffic evidence (counts, never addresses).
        .target(name: "TrafficCensus", dependencies: ["CLinux", "EventLoop", "NetAddress", "NetCore", "ProbeRules", "Reachability", "ReachabilityRules", "Timekeeping"]),
        // ICMP echo (datagram or raw sockets, TCP fallback) and name resolution: the drivers around ProbeRules.
        .target(name: "Probe", dependencies: ["CLinux", "EventLoop", "NetCore", "ProbeRules", "NetAddress", "Reachability", "ReachabilityRules",
                                              "Timekeeping"]),
        // The Swift D-Bus layer: typed values, messages, connection on the loop, exported objects.
        .target(name: "DBusKit", dependencies: ["CDBus", "EventLoop", "Timekeeping"]),
        // What ModemManager and NetworkManager say about links: modem generation, metered.
        .target(name: "Cellular", dependencies: ["DBusKit", "EventLoop", "MonitorRules", "Timekeeping"]),
        // CheckURL: libcurl's multi-socket interface on the MainLoop, and what an answer means.
        .target(name: "HTTPCheck", dependencies: ["CCurl", "EventLoop", "MonitorRules", "ProbeRules", "Timekeeping"]),
        // org.netobserver.Monitor's names, types, access and change modes, typed once for daemon, client and tests.
        .target(name: "MonitorContract", dependencies: ["DBusKit", "MonitorRules", "ProbeRules"]),
        // The blocking helper: a second process for whatever may block (lookups, the census, file writes),
        // its wire, and the atomic file it writes through. The daemon never starts a thread of its own.
        .target(name: "HelperProcess", dependencies: ["CLinux", "CResolv", "EventLoop", "MonitorRules", "NetAddress", "NetCore", "Probe", "ProbeRules", "ReachabilityRules", "Timekeeping", "TrafficCensus"]),
        // The daemon's log lines (stderr, or the journal's levels).
        .target(name: "ServiceLog"),
        // The daemon's worlds around the drivers in the rules: each target's (`ConnectivityMonitor`, its checks,
        // DNS truth) and the service's (`DaemonServiceWorld`, the portal APIs' fetches), on the loop's sockets.
        .target(name: "DaemonWorlds", dependencies: ["HelperProcess", "EventLoop", "HTTPCheck", "MonitorRules", "NetAddress", "NetCore", "Probe", "ProbeRules", "Reachability", "ReachabilityRules", "ServiceLog", "Timekeeping", "TrafficCensus"]),
        // org.netobserver.Monitor: the D-Bus face, settings, the monitor model, the process shell.
        .target(name: "MonitorService", dependencies: ["DaemonWorlds", "HelperProcess", "CLinux", "DBusKit", "MonitorContract", "MonitorRules", "EventLoop", "NetCore", "Reachability", "Probe", "Cellular", "HTTPCheck", "NetAddress", "ProbeRules", "ServiceLog", "TrafficCensus", "Timekeeping"]),
        // Released, what an idle daemon runs is linked first (tools/text-order.sh): with it together, the kernel's
        // 64 KiB fault-around keeps ~1.5 MB less text resident. Every library symbol is bound at start (-z now),
        // before the start-up trims: bound lazily, each first call after them read the symbol tables back (~0.7 MB).
        .executableTarget(name: "netobserverd", dependencies: ["MonitorService"], exclude: ["steady-text.order"],
                          linkerSettings: [.unsafeFlags(["-use-ld=lld",
                                                         "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/netobserverd/steady-text.order",
                                                         "-Xlinker", "--no-warn-symbol-ordering",
                                                         "-Xlinker", "-z", "-Xlinker", "now"],
                                                        .when(configuration: .release))]),
        // The engines' cores on a virtual clock against a simulated kernel, far host and resolver (tests and bench).
        // Its release build (the bench's) leaves out the run-time exclusivity checks of its own classes' properties, a
        // twelfth of its time; the debug build the tests run keeps them, and the daemon's code it drives keeps them always.
        .target(name: "Simulation", dependencies: ["MonitorRules", "NetAddress", "NetCore", "ProbeRules", "ReachabilityRules", "Timekeeping"],
                swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]),
        // One fuzz input through the real dispatch of a complete Monitor object; the fuzzer and its replay test share it.
        // The other fuzzed surfaces (state file, validators, the client, the system-bus follower) beside it.
        .target(name: "DBusFuzzHarness", dependencies: ["DaemonWorlds", "HelperProcess", "DBusKit", "EventLoop", "MonitorService", "MonitorContract", "MonitorClientCore", "MonitorRules", "NetAddress", "Timekeeping"]),
        // What the client makes of the service's values: the snapshot, the bar formats, the metrics text,
        // the signals it believes. A library of its own so the fuzzer reaches it.
        .target(name: "MonitorClientCore", dependencies: ["DBusKit", "MonitorContract", "MonitorRules", "ProbeRules", "Timekeeping"]),
        // The command-line client for people and scripts.
        .executableTarget(name: "netobserver", dependencies: ["DBusKit", "EventLoop", "MonitorContract", "MonitorClientCore", "MonitorRules", "ProbeRules", "Timekeeping"]),
        // `make bench` measurements that need root and network namespaces.
        .executableTarget(name: "netobserver-bench", dependencies: ["Reachability", "Probe", "EventLoop", "CLinux", "NetCore", "DBusKit", "Simulation", "NetAddress", "ProbeRules", "ReachabilityRules", "TrafficCensus", "Timekeeping"]),

        // The loop alone: turns, timers, descriptors, signals, worker threads, on its injectable clock.
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "TestTime", "Timekeeping"]),
        // The census: sock_diag answers parsed, sampled and judged, over loopback connections.
        .testTarget(name: "TrafficCensusTests", dependencies: ["TrafficCensus", "Reachability", "CLinux", "EventLoop", "IntegrationSupport",
                                                               "NetAddress", "NetCore", "ProbeRules", "ReachabilityRules", "TestTime", "Timekeeping"]),
        .testTarget(name: "DBusKitTests", dependencies: ["DBusKit", "EventLoop", "IntegrationSupport", "Cellular", "MonitorRules", "Timekeeping", "TestTime"]),
        .testTarget(name: "MonitorServiceTests", dependencies: ["DaemonWorlds", "ServiceLog", "HelperProcess", "MonitorService", "MonitorContract", "NetCore", "Reachability", "Probe", "DBusFuzzHarness", "Cellular", "DBusKit", "HTTPCheck", "IntegrationSupport", "EventLoop", "MonitorRules", "NetAddress", "ProbeRules", "ReachabilityRules", "TrafficCensus", "Timekeeping", "TestTime"]),
        .testTarget(name: "NetAddressTests", dependencies: ["NetAddress", "NetCore"]),
        .testTarget(name: "TimekeepingTests", dependencies: ["Timekeeping"]),
        .testTarget(name: "ProbeRulesTests", dependencies: ["NetAddress", "ProbeRules", "Timekeeping", "TestTime"]),
        .testTarget(name: "ReachabilityRulesTests", dependencies: ["CLinux", "NetAddress", "NetCore", "ReachabilityRules", "Timekeeping", "TestTime"]),
        .testTarget(name: "MonitorRulesTests", dependencies: ["MonitorRules", "NetAddress", "NetCore", "ProbeRules", "ReachabilityRules", "Timekeeping", "TestTime"]),
        .testTarget(name: "SimulationTests", dependencies: ["Simulation", "MonitorRules", "NetAddress", "ProbeRules", "Timekeeping", "TestTime"]),
        .testTarget(name: "DaemonWorldsTests", dependencies: ["DaemonWorlds", "HelperProcess", "EventLoop", "HTTPCheck", "IntegrationSupport", "MonitorRules", "NetAddress", "NetCore", "Probe", "ProbeRules", "Reachability", "ReachabilityRules", "TrafficCensus", "Timekeeping", "TestTime"]),
        .testTarget(name: "HelperProcessTests", dependencies: ["HelperProcess", "EventLoop", "MonitorRules", "NetAddress", "ProbeRules", "ReachabilityRules", "TrafficCensus", "Timekeeping"]),
        .testTarget(name: "HTTPCheckTests", dependencies: ["HTTPCheck", "MonitorRules", "EventLoop", "IntegrationSupport", "Timekeeping", "TestTime"], exclude: ["server.py", "make_test_ca.sh"]),
        .testTarget(name: "ProbeTests", dependencies: ["Probe", "NetCore", "EventLoop", "NetAddress", "ProbeRules", "Timekeeping", "TestTime"]),
        .testTarget(name: "ReachabilityTests", dependencies: ["Reachability", "ReachabilityRules", "CLinux", "EventLoop", "NetCore", "ProbeRules", "IntegrationSupport", "NetAddress", "TrafficCensus", "Timekeeping", "TestTime"]),
        // Root only: network namespaces with veth pairs; they skip (or fail under CI=true) otherwise.
        .testTarget(name: "NamespaceTests", dependencies: ["Reachability", "Probe", "EventLoop", "NetCore", "IntegrationSupport", "MonitorContract", "MonitorRules", "NetAddress", "ProbeRules", "ReachabilityRules", "Timekeeping", "TestTime"],
                    exclude: ["helpers"]),
        // How tests write time: `510 * ms` on a clock starting at the origin, literals as nanoseconds.
        .target(name: "TestTime", dependencies: ["Timekeeping"], path: "Tests/TestTime"),
        // Private buses, daemon processes, network namespaces: shared by the integration tests.
        .target(name: "IntegrationSupport", dependencies: ["CLinux", "MonitorContract"], path: "Tests/IntegrationSupport"),
        // Needs dbus-daemon and real clients (busctl, gdbus, qdbus, python3-dbus, python3-gi); no root.
        .testTarget(name: "DaemonIntegrationTests", dependencies: ["IntegrationSupport", "MonitorContract", "MonitorRules"], exclude: ["clients"]),
    ],
    swiftLanguageModes: [.v6]
)
