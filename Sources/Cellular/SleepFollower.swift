import DBusKit

/// logind's word on sleep (INTERFACE.md "Sleep is not an outage"): `PrepareForSleep(true)` before the
/// machine suspends, `(false)` after it woke, followed on the system-bus follower's connection. Only
/// logind's current owner is believed; when it leaves, or the bus is lost, while the machine is said
/// to sleep, the machine is taken to be awake (nobody is left to say so).
final class SleepFollower {
    static let service = "org.freedesktop.login1"
    static let path = "/org/freedesktop/login1"
    static let interface = "org.freedesktop.login1.Manager"

    private let owner: NameOwnerWatch
    private var subscription: SignalSubscription?
    private(set) var asleep = false
    private let onChange: (Bool) -> Void

    init(connection: BusConnection, onChange: @escaping (_ asleep: Bool) -> Void) {
        self.onChange = onChange
        owner = NameOwnerWatch(connection: connection, name: Self.service)
        subscription = connection.subscribe(
            MatchRule(
                sender: Self.service, path: Self.path, interface: Self.interface,
                member: "PrepareForSleep")
        ) { [weak self] message in self?.signal(message) }
        owner.onChange = { [weak self] newOwner in
            if newOwner == nil { self?.set(false) }
        }
    }

    /// The connection goes: a sleep nobody can end any more is over.
    func drop() {
        subscription = nil
        set(false)
    }

    private func signal(_ message: Message) {
        guard let current = owner.owner, message.sender == current, message.path == Self.path,
            let arguments = try? message.arguments(), arguments.count == 1, let start = arguments[0].boolValue
        else { return }
        set(start)
    }

    private func set(_ value: Bool) {
        guard value != asleep else { return }
        asleep = value
        onChange(value)
    }
}
