import EventLoop
import NetAddress
import ProbeRules
import Timekeeping

/// Every target's neighbour checks (INTERFACE.md "The neighbour check"): one check serves every target
/// behind the same (interface, gateway). A check asked while one runs for that next hop joins it; the
/// healthy recheck (`routine`) takes an answer another target got within `reuse` instead of sending; a
/// suspicion, a new next hop or a resume asks afresh. So a healthy network sees at most one ARP request
/// or Neighbor Solicitation exchange per gateway a minute, whatever the number of targets.
public final class NeighborChecks {
    public static let reuse = Duration.seconds(60)

    fileprivate struct NextHop: Hashable {
        let interfaceIndex: Int32
        let gateway: IPAddress
    }

    /// A request's handle: cancelling it drops its completion, and the check when nobody else waits.
    public final class Ticket {
        fileprivate weak var owner: NeighborChecks?
        fileprivate let nextHop: NextHop
        fileprivate let number: UInt64

        fileprivate init(owner: NeighborChecks, nextHop: NextHop, number: UInt64) {
            self.owner = owner
            self.nextHop = nextHop
            self.number = number
        }

        public func cancel() { owner?.cancel(self) }
    }

    private let loop: MainLoop
    private let start:
        (
            _ gateway: IPAddress, _ interfaceIndex: Int32, _ source: IPAddress?,
            _ completion: @escaping (NeighborAnswer) -> Void
        ) -> AnyObject
    /// The check under way for each next hop (never answering within its start), and who waits for it.
    private var running: [NextHop: (check: AnyObject, waiting: [UInt64: (NeighborAnswer) -> Void])] = [:]
    /// Each next hop's last answer, kept for `reuse` (bounded by the next hops the targets' routes name).
    private var answered: [NextHop: (answer: NeighborAnswer, at: Instant)] = [:]
    /// Routine requests answered from `answered`, until the end of the turn hands them the answer.
    private var reused: Set<UInt64> = []
    private var tickets: UInt64 = 0
    /// Checks that went on the wire (for tests and the bench).
    public private(set) var started = 0

    /// `start` begins one check and returns what keeps it running, answering later through its completion, never
    /// from inside `start` (a `NeighborCheckRun`; tests bring another).
    public init(
        loop: MainLoop,
        start: ((IPAddress, Int32, IPAddress?, @escaping (NeighborAnswer) -> Void) -> AnyObject)? = nil
    ) {
        self.loop = loop
        self.start =
            start ?? { gateway, index, source, completion in
                NeighborCheckRun(
                    loop: loop, gateway: gateway, interfaceIndex: index, source: source, completion: completion)
            }
    }

    /// Asks `gateway` on `interfaceIndex`; `completion` runs once, on the loop and never from inside this call,
    /// unless the ticket is cancelled first.
    public func check(
        gateway: IPAddress, interfaceIndex: Int32, source: IPAddress?, routine: Bool,
        completion: @escaping (NeighborAnswer) -> Void
    ) -> Ticket {
        let nextHop = NextHop(interfaceIndex: interfaceIndex, gateway: gateway)
        tickets &+= 1
        let ticket = Ticket(owner: self, nextHop: nextHop, number: tickets)
        let now = loop.now()
        answered = answered.filter { now - $0.value.at < Self.reuse }
        if routine, running[nextHop] == nil, let last = answered[nextHop], last.answer == .reachable {
            let number = ticket.number
            reused.insert(number)
            loop.atEndOfTurn { [weak self] in
                guard let self, reused.remove(number) != nil else { return }
                completion(last.answer)
            }
            return ticket
        }
        if running[nextHop] == nil {
            started += 1
            let check = start(gateway, interfaceIndex, source) { [weak self] answer in self?.finished(nextHop, answer) }
            running[nextHop] = (check, [:])
        }
        running[nextHop]?.waiting[ticket.number] = completion
        return ticket
    }

    private func finished(_ nextHop: NextHop, _ answer: NeighborAnswer) {
        answered[nextHop] = (answer, loop.now())
        guard let entry = running.removeValue(forKey: nextHop) else { return }
        for (_, completion) in entry.waiting.sorted(by: { $0.key < $1.key }) { completion(answer) }
    }

    fileprivate func cancel(_ ticket: Ticket) {
        reused.remove(ticket.number)
        guard var entry = running[ticket.nextHop], entry.waiting.removeValue(forKey: ticket.number) != nil else {
            return
        }
        if entry.waiting.isEmpty {
            (entry.check as? NeighborCheckRun)?.cancel()
            running[ticket.nextHop] = nil
        } else {
            running[ticket.nextHop] = entry
        }
    }
}
