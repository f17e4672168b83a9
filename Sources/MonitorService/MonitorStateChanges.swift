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
        for (new, old, properties) in [(ipv4, old.ipv4, [MonitorContract.Property.connectivity4, .address4, .reason4, .roundTripTime4]),
                                       (ipv6, old.ipv6, [.connectivity6, .address6, .reason6, .roundTripTime6])] {
            if new.connectivity != old.connectivity { changed.append(properties[0]) }
            if new.address != old.address { changed.append(properties[1]) }
            if new.reason != old.reason { changed.append(properties[2]) }
            if new.roundTripTime != old.roundTripTime { changed.append(properties[3]) }
        }
        if nat64Prefix != old.nat64Prefix { changed.append(.nat64Prefix) }
        if nat64Source != old.nat64Source { changed.append(.nat64Source) }
        if ipv4Path != old.ipv4Path { changed.append(.ipv4Path) }
        if portalAPI != old.portalAPI { changed.append(.portalAPI) }
        if portalVenueURL != old.portalVenueURL { changed.append(.portalVenueURL) }
        if portalSecondsRemaining != old.portalSecondsRemaining { changed.append(.portalSecondsRemaining) }
        if partial != old.partial { changed.append(.partial) }
        if ipv4.gateway != old.ipv4.gateway { changed.append(.gateway4) }
        if ipv6.gateway != old.ipv6.gateway { changed.append(.gateway6) }
        if blame != old.blame { changed.append(.blame) }
        if ipv4.neighbor != old.ipv4.neighbor { changed.append(.neighbor4) }
        if ipv6.neighbor != old.ipv6.neighbor { changed.append(.neighbor6) }
        return changed
    }
}
