import DBusKit
import EventLoop
import Glibc
import MonitorContract

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
    client = MonitorClient(connection: try BusConnection(options.bus, loop: loop), bus: options.bus)
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
    case .check:
        guard let status = try client.call(.check, [], timeoutMilliseconds: 70_000).first?.stringValue else {
            fail("the service answered Check with something else", status: 1)
        }
        writeLine(status)
        exit(["unknown", "none"].contains(status) ? 1 : 0)
    case .wait(let seconds):
        let reply = try client.call(.wait, [.uint32(seconds * 1000)], timeoutMilliseconds: Int32(seconds) * 1000 + 5000)
        exit(reply.first?.boolValue == true ? 0 : 1)
    case .set(let property, let text):
        let value: DBusValue
        if property.type == .uint32 {
            guard let number = UInt32(text) else { fail("set \(property.settingName ?? property.name): '\(text)' is not a number", status: 2) }
            value = .uint32(number)
        } else {
            value = .string(text)
        }
        try client.set(property, value)
    case .monitor(let format):
        var snapshot = Snapshot(try client.properties())
        var last = format.line(snapshot)
        writeLine(last)
        client.onPropertiesChanged(loop: loop) { changed in
            snapshot.update(changed)
            // A bar redraws per line: a change it would not show is no line.
            let line = format.line(snapshot)
            guard line != last else { return }
            last = line
            writeLine(line)
        }
        exit(loop.run())
    case .metrics(nil):
        writeLine(PrometheusText.render([(MonitorContract.objectPath, Snapshot(try client.properties()))]), terminator: "")
    case .metrics(let path?):
        let writer = TextfileWriter(path: path)
        // Rewritten on every change, and every 15 s so the counters (which change quietly) move.
        func refresh() {
            do {
                try writer.write(PrometheusText.render([(MonitorContract.objectPath, Snapshot(try client.properties()))]))
            } catch let failure as TextfileWriter.Failure {
                writeLine("netobserver: \(failure.message)", to: 2)
            } catch {
                writeLine("netobserver: \(error)", to: 2)
            }
        }
        _ = try client.properties()
        refresh()
        loop.schedule(after: 15_000_000_000, repeats: true) { refresh() }
        client.onPropertiesChanged(loop: loop) { _ in refresh() }
        exit(loop.run())
    }
} catch {
    fail(error.message, status: 1)
}
