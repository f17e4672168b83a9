"""Sends one router advertisement on an interface, to all nodes, carrying the options given:
send_ra.py IFNAME pref64 PREFIX/LENGTH LIFETIME_SECONDS  (RFC 8781; lifetime 0 withdraws)
send_ra.py IFNAME raw HEX                                  (option bytes as given: malformed ones too)
send_ra.py IFNAME portal URI                               (RFC 8910's captive-portal option, 37)
Each carries the interface's own link-layer address (option 1) before the option given.
The router lifetime is 0, so the client takes no default route from it. Run as root in the
router's namespace; the kernel fills in the ICMPv6 checksum."""
import ipaddress
import os
import socket
import struct
import sys
import time

ifname, kind = sys.argv[1], sys.argv[2]
if kind == "pref64":
    network = ipaddress.IPv6Network(sys.argv[3])
    codes = {96: 0, 64: 1, 56: 2, 48: 3, 40: 4, 32: 5}
    scaled = min(int(sys.argv[4]) // 8, 0x1FFF)
    option = struct.pack("!BBH", 38, 2, (scaled << 3) | codes[network.prefixlen]) + network.network_address.packed[:12]
elif kind == "portal":
    uri = sys.argv[3].encode()
    length = (2 + len(uri) + 7) // 8
    option = struct.pack("!BB", 37, length) + uri + b"\0" * (length * 8 - 2 - len(uri))
elif kind == "raw":
    option = bytes.fromhex(sys.argv[3])
else:
    sys.exit("unknown kind " + kind)

# Its own link-layer address first, as routers send it (RFC 4861 4.6.1): how a host tells the router's
# link-local address from the global one its default route names is the same card.
# RA_CARD and RA_SOURCE (environment) make it another host's: its own card, its own link-local address.
with open("/sys/class/net/%s/address" % ifname) as f:
    card = bytes.fromhex(os.environ.get("RA_CARD") or f.read().strip().replace(":", ""))
source_link_layer = struct.pack("!BB", 1, 1) + card
# Type 134, code 0, checksum 0, hop limit 64, no flags, router lifetime 0, reachable 0, retransmit 0.
advertisement = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 0, 0, 0) + source_link_layer + option
index = socket.if_nametoindex(ifname)
sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_UNICAST_HOPS, 255)
sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index)
if os.environ.get("RA_SOURCE"):
    sock.bind((os.environ["RA_SOURCE"], 0, 0, index))
# Stamped just before it leaves: the bench's delay runs from here (a stamp after sendto(2) may come after
# the service has already said it).
sent = time.monotonic_ns()
sock.sendto(advertisement, ("ff02::1", 0, 0, index))
print("sent", sent)
