import Foundation
import Glibc
import IntegrationSupport
import MonitorContract
import XCTest

/// dbus/org.netobserver.Monitor.conf on a bus running the system bus's own
/// configuration: callers root, a member of netdev and an ordinary user, each
/// trying every action. Users and (if missing) the netdev group are made here.
final class PolicyMatrixTests: XCTestCase {
    var bus: PrivateBus!
    var daemon: DaemonProcess!
    let admin = "nobs-admin\(getpid() % 10000)"
    let ordinary = "nobs-user\(getpid() % 10000)"
    var madeNetdev = false

    override func setUpWithError() throws {
        try requireRoot()
        if (try? sh("getent group netdev")) == nil {
            try sh("groupadd --system netdev")
            madeNetdev = true
        }
        try sh("useradd --system --no-create-home --shell /usr/sbin/nologin -G netdev \(admin)")
        try sh("useradd --system --no-create-home --shell /usr/sbin/nologin \(ordinary)")
        bus = try PrivateBus(
            systemPolicy: Paths.repository.appendingPathComponent("dbus/org.netobserver.Monitor.conf").path)
        daemon = try DaemonProcess(bus: bus)
    }

    override func tearDown() {
        daemon?.stop()
        bus?.stop()
        _ = try? sh("userdel \(admin)")
        _ = try? sh("userdel \(ordinary)")
        if madeNetdev { _ = try? sh("groupdel netdev") }
    }

    func attempt(_ action: String, as user: String?) throws -> String {
        let script = Paths.namespaceHelpers + "/policy_probe.py"
        let words = action.split(separator: " ").map(String.init)
        let command =
            user.map { ["runuser", "-u", $0, "--", Paths.python, script, bus.address] + words }
            ?? [Paths.python, script, bus.address] + words
        let out = try runCommand(command)
        XCTAssertEqual(out.status, 0, out.stderr)
        return out.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func host() throws -> String {
        try runCommand([
            "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName,
            MonitorContract.objectPath, MonitorContract.interface, P.host.name,
        ]).stdout
    }

    /// The added targets' paths (busctl prints `ao 2 "/…/1" "/…/2"`).
    func targetPaths() throws -> [String] {
        let out = try runCommand([
            "busctl", "--address=\(bus.address)", "get-property", MonitorContract.busName, MonitorContract.objectPath,
            MonitorContract.Targets.interface, MonitorContract.Targets.targetsProperty,
        ]).stdout
        return out.split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    /// Every method the interface XML declares, and every standard one the object implements, called by an
    /// ordinary user through the shipped policy: allowed, but for the three that change something.
    func testEveryMethodThroughTheInstalledPolicyAsAnOrdinaryUser() throws {
        let xml = try String(
            contentsOf: Paths.repository.appendingPathComponent("dbus/org.netobserver.Monitor.xml"), encoding: .utf8)
        var methods: [(interface: String, member: String, signature: String)] = [
            ("org.freedesktop.DBus.Properties", "Get", "ss"), ("org.freedesktop.DBus.Properties", "GetAll", "s"),
            ("org.freedesktop.DBus.Properties", "Set", "ssv"),
            ("org.freedesktop.DBus.Introspectable", "Introspect", ""),
            ("org.freedesktop.DBus.Peer", "Ping", ""), ("org.freedesktop.DBus.Peer", "GetMachineId", ""),
            ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects", ""),
        ]
        var interface = ""
        var current: (member: String, signature: String)?
        for line in xml.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            func attribute(_ name: String) -> String? {
                guard let start = line.range(of: name + "=\"") else { return nil }
                return String(line[start.upperBound...].prefix { $0 != "\"" })
            }
            if line.hasPrefix("<interface ") { interface = attribute("name") ?? "" }
            if line.hasPrefix("<method ") {
                current = (attribute("name") ?? "", "")
                if line.hasSuffix("/>") { methods.append((interface, current!.member, "")); current = nil }
            }
            if line.hasPrefix("<arg "), attribute("direction") == "in", let type = attribute("type") {
                current?.signature += type
            }
            if line.hasPrefix("</method>"), let method = current {
                methods.append((interface, method.member, method.signature))
                current = nil
            }
        }
        XCTAssertTrue(methods.contains { $0.member == "GetHistory" }, "the XML was read")
        let changing: Set<String> = ["Set", "AddTarget", "RemoveTarget"]
        for method in methods {
            // Set's variant argument has no zero value here: its cell is the matrix's "set".
            if method.signature.contains("v") { continue }
            let result = try attempt("method \(method.interface) \(method.member) \(method.signature)", as: ordinary)
            let expected = changing.contains(method.member) ? "org.freedesktop.DBus.Error.AccessDenied" : "ok"
            XCTAssertEqual(result, expected, "\(method.interface).\(method.member) as an ordinary user")
        }
        XCTAssertEqual(try attempt("set", as: ordinary), "org.freedesktop.DBus.Error.AccessDenied")
    }

    func testEveryCellMatchesThePolicy() throws {
        let denied = "org.freedesktop.DBus.Error.AccessDenied"
        let reads = ["get", "getall", "introspect", "ping", "check", "wait", "managed", "history"]
        var matrix: [String] = []
        for (caller, user, canSet, canOwn) in [
            ("root", nil as String?, true, true), ("netdev", admin, true, false),
            ("user", ordinary, false, false),
        ] {
            var row: [String] = []
            for action in reads {
                let result = try attempt(action, as: user)
                XCTAssertEqual(result, "ok", "\(caller) \(action)")
                row.append("\(action)=\(result == "ok" ? "allowed" : "denied")")
            }
            let before = try host()
            let set = try attempt("set", as: user)
            XCTAssertEqual(set, canSet ? "ok" : denied, "\(caller) set")
            if !canSet { XCTAssertEqual(try host(), before, "a denied Set changes nothing") }
            // Adding and removing targets: whoever may Set. A denied caller's attempt changes nothing.
            let targetsBefore = try targetPaths()
            let add = try attempt("add", as: user)
            XCTAssertEqual(add, canSet ? "ok" : denied, "\(caller) add")
            if !canSet {
                XCTAssertEqual(try targetPaths(), targetsBefore)
                _ = try attempt("add", as: nil)
            }
            let remove = try attempt("remove", as: user)
            XCTAssertEqual(remove, canSet ? "ok" : denied, "\(caller) remove")
            if !canSet {
                XCTAssertEqual(
                    try targetPaths().count, targetsBefore.count + 1, "a denied RemoveTarget removes nothing")
            }
            row += ["add=\(add == "ok" ? "allowed" : "denied")", "remove=\(remove == "ok" ? "allowed" : "denied")"]
            let own = try attempt("own", as: user)
            XCTAssertEqual(own, canOwn ? "ok" : denied, "\(caller) own")
            row += ["set=\(set == "ok" ? "allowed" : "denied")", "own=\(own == "ok" ? "allowed" : "denied")"]
            matrix.append("\(caller): " + row.joined(separator: " "))
        }
        print("policy matrix:\n" + matrix.joined(separator: "\n"))
    }
}
