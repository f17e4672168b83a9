import MonitorContract
import MonitorRules

extension MonitorState {
    /// The properties whose values differ between two states.
    public func changedProperties(from old: MonitorState) -> [MonitorContract.Property] {
        var changed: [MonitorContract.Property] = []
        if status != old.status { changed += [.status, .reachable] }
        if interface != old.interface { changed.append(.interface) }
        if address != old.address { changed.append(.address) }
        if reason != old.reason { changed.append(.reason) }
        if roundTripTime != old.roundTripTime { changed.append(.roundTripTime) }
        if packetLoss != old.packetLoss { changed.append(.packetLoss) }
        if lastChange != old.lastChange { changed.append(.lastChange) }
        if probesSent != old.probesSent { changed.append(.probesSent) }
        if probesAnswered != old.probesAnswered { changed.append(.probesAnswered) }
        if accessTechnology != old.accessTechnology { changed.append(.accessTechnology) }
        if metered != old.metered { changed.append(.metered) }
        if connectivity != old.connectivity { changed.append(.connectivity) }
        if probeMethod != old.probeMethod { changed.append(.probeMethod) }
        if portalURL != old.portalURL { changed.append(.portalURL) }
        if traffic != old.traffic { changed.append(.traffic) }
        if probesSkipped != old.probesSkipped { changed.append(.probesSkipped) }
        return changed
    }
}
