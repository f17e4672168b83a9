import CLinux
import EventLoop
import Glibc
import ReachabilityRules

/// Classifies links from their ARPHRD type, IFLA_INFO_KIND and sysfs.
/// The sysfs root is injectable so tests use fake trees.
public struct InterfaceClassifier: Sendable {
    public let sysfsRoot: String

    public init(sysfsRoot: String = "/sys") {
        self.sysfsRoot = sysfsRoot
    }

    static let tunnelKinds: Set<String> = [
        "tun", "tap", "wireguard", "ipip", "gre", "gretap", "ip6gre", "ip6gretap",
        "sit", "ip6tnl", "vti", "vti6", "xfrm", "ppp", "l2tp", "openvpn", "ovpn",
    ]
    static let tunnelTypes: Set<Int32> = [
        ARPHRD_NONE, ARPHRD_PPP, ARPHRD_TUNNEL, ARPHRD_TUNNEL6, ARPHRD_SIT,
        ARPHRD_IPGRE,
    ]
    static let cellularDrivers: Set<String> = [
        "qmi_wwan", "cdc_mbim", "rmnet", "rmnet_ipa", "ipa", "mhi_net",
        "mhi_wwan_mbim", "wwan", "sierra_net", "option", "huawei_cdc_ncm",
    ]

    public func classify(_ link: Link) -> InterfaceKind {
        let directory = deviceDirectory(link.name)
        let uevent = directory.flatMap { read($0 + "/uevent") } ?? ""
        let devtype = uevent.split(separator: "\n").first { $0.hasPrefix("DEVTYPE=") }.map { String($0.dropFirst(8)) }

        if let directory, exists(directory + "/wireless") || exists(directory + "/phy80211") || devtype == "wlan" {
            return .wifi
        }
        if devtype == "wwan" || link.kind == "rmnet" || link.kind == "wwan"
            || directory.flatMap({ driver(of: $0) }).map(Self.cellularDrivers.contains) == true
        {
            return .cellular
        }
        if let kind = link.kind, Self.tunnelKinds.contains(kind) { return .vpn }
        if Self.tunnelTypes.contains(Int32(link.type)) { return .vpn }
        if let directory, exists(directory + "/tun_flags") { return .vpn }
        if Int32(link.type) == ARPHRD_ETHER { return .ethernet }
        return .other
    }

    /// sysfs path of a link, unless the name could escape the directory.
    private func deviceDirectory(_ name: String) -> String? {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/") else { return nil }
        return sysfsRoot + "/class/net/" + name
    }

    /// The entry exists (a symlink counts even when its target is elsewhere).
    private func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    private func read(_ path: String) -> String? {
        guard let file = try? Syscall.descriptor("open", { open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count =
            (try? Syscall.retrying("read") {
                buffer.withUnsafeMutableBytes { Glibc.read(file.raw, $0.baseAddress, $0.count) }
            }) ?? 0
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    private func driver(of directory: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(directory + "/device/driver", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return target.split(separator: "/").last.map(String.init)
    }
}
