import DBusKit
import EventLoop
import Glibc
import MonitorClientCore
import MonitorContract
import MonitorRules
import ProbeRules
import Timekeeping

func fail(_ message: String, status: Int32) -> Never {
    writeLine("netobserver: \(message)", to: 2)
    exit(status)
}

let options: ClientOptions
do {
    guard let parsed = try ClientOptions.parse(Array(CommandLine.arguments.dropFirst())) else {
        writeLine(ClientOptions.usage)
        exit(0)
    }
    options = parsed
} catch {
    fail(error.message, status: 2)
}

let loop: MainLoop
let client: MonitorClient
do {
    loop = try MainLoop()
    try loop.handleSignals([SIGINT, SIGTERM]) { _ in loop.quit(status: 0) }
    let (connection, bus) =
        if let chosen = options.bus { (try BusConnection(chosen, loop: loop), chosen) } else {
            try DefaultBus.connect(loop: loop)
        }
    client = MonitorClient(connection: connection, bus: bus, path: options.path)
} catch let error as DBusError {
    fail("cannot connect to the bus: \(error.message)", status: 1)
} catch {
    fail("\(error)", status: 1)
}

do {
    switch options.command {
    case .status(let json):
        let snapshot = Snapshot(try client.properties())
        writeLine(json ? snapshot.json() : snapshot.screen())
    case .check(let require):
        guard let status = try client.call(.check, [], timeoutMilliseconds: 70_000).first?.stringValue else {
            fail("the service answered Check with something else", status: 1)
        }
        writeLine(status)
        if require == .full { exit(["unknown", "none"].contains(status) ? 1 : 0) }
        exit(require.isMet(by: Snapshot(try client.properties()).Connectivity) ? 0 : 1)
    case .wait(let seconds, let require):
        if require == .full {
            let reply = try client.call(
                .wait, [.uint32(seconds * 1000)], timeoutMilliseconds: Int32(seconds) * 1000 + 5000)
            if reply.first?.boolValue == true { exit(0) }
        } else {
            // Signals first, then the values: no change can fall between the two.
            var snapshot = Snapshot([:])
            client.onPropertiesChanged(loop: loop) { _, changed in
                snapshot.update(changed)
                if require.isMet(by: snapshot.Connectivity) { loop.quit(status: 0) }
            }
            snapshot.update(try client.properties())
            if require.isMet(by: snapshot.Connectivity) { exit(0) }
            loop.schedule(after: .seconds(seconds)) { loop.quit(status: 1) }
            if loop.run() == 0 { exit(0) }
        }
        // One line for the journal: what the service says, and why.
        let now = Snapshot((try? client.properties()) ?? [:])
        writeLine(
            "netobserver: not online after \(seconds) s: \(now.Connectivity.isEmpty ? "unknown" : now.Connectivity)"
                + (now.Reason.isEmpty ? "" : ": \(now.Reason)"), to: 2)
        exit(1)
    case .set(let property, let text):
        let value: DBusValue
        if property.type == .uint32 {
            guard let number = UInt32(text) else {
                fail("set \(property.settingName ?? property.name): '\(text)' is not a number", status: 2)
            }
            value = .uint32(number)
        } else if property.type == .boolean {
            let flags = ["true": true, "false": false, "yes": true, "no": false, "on": true, "off": false]
            guard let flag = flags[text] else {
                fail("set \(property.settingName ?? property.name): '\(text)' is not true or false", status: 2)
            }
            value = .boolean(flag)
        } else {
            value = .string(text)
        }
        try client.set(property, value)
    case .monitor(let format, let all):
        // Every target with --all (each line then starts with its host), else the one addressed.
        var snapshots: [String: Snapshot] = [:]
        var last: [String: String] = [:]
        func show(_ path: String) {
            guard let snapshot = snapshots[path] else { return }
            var line = format.line(snapshot)
            if all && format == .plain { line = snapshot.Host + " " + line }
            // A bar redraws per line: a change it would not show is no line.
            guard line != last[path] else { return }
            last[path] = line
            writeLine(line)
        }
        for path in all ? try client.targetPaths() : [client.path] {
            snapshots[path] = Snapshot(try client.at(path).properties())
            show(path)
        }
        client.onPropertiesChanged(loop: loop, allTargets: all) { path, changed in
            if snapshots[path] == nil {
                // A target added since: its first line needs all of its properties.
                guard let values = try? client.at(path).properties() else { return }
                snapshots[path] = Snapshot(values)
            }
            snapshots[path]?.update(changed)
            show(path)
        }
        exit(loop.run())
    case .targets:
        for path in try client.targetPaths() {
            let snapshot = Snapshot(try client.at(path).properties())
            writeLine("\(path) \(snapshot.Host) \(snapshot.Status)")
        }
    case .add(let host):
        let reply = try client.at(MonitorContract.objectPath).call(
            MonitorContract.Targets.interface,
            MonitorContract.Targets.addTarget, [.string(host)])
        guard case .objectPath(let path)? = reply.first else {
            fail("the service answered AddTarget with something else", status: 1)
        }
        writeLine(path)
    case .remove(let path):
        _ = try client.at(MonitorContract.objectPath).call(
            MonitorContract.Targets.interface,
            MonitorContract.Targets.removeTarget, [.objectPath(path)])
    case .history(let limit, let json):
        let entries = HistoryText.entries(try client.call(.getHistory, [.uint32(limit)], timeoutMilliseconds: 25_000))
        let times = Snapshot(try client.properties()).TimeInState
        writeLine(json ? HistoryText.json(entries, times: times) : HistoryText.text(entries, times: times))
    case .metrics(nil):
        writeLine(PrometheusText.render(try client.allSnapshots()), terminator: "")
    case .metrics(let path?):
        let writer = TextfileWriter(path: path)
        // Rewritten on every change, and every 15 s so the counters (which change quietly) move.
        func refresh() {
            do {
                try writer.write(PrometheusText.render(try client.allSnapshots()))
            } catch let failure as TextfileWriter.Failure {
                writeLine("netobserver: \(failure.message)", to: 2)
            } catch {
                writeLine("netobserver: \(error)", to: 2)
            }
        }
        _ = try client.properties()
        refresh()
        loop.schedule(after: .seconds(15), repeats: true) { refresh() }
        client.onPropertiesChanged(loop: loop, allTargets: true) { _, _ in refresh() }
        exit(loop.run())
    }
} catch {
    fail(error.message, status: 1)
}
