"""ICMP helpers shared by the test responders."""
import struct


def checksum(data):
    """RFC 1071 one's-complement checksum."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def echo_requests(sock):
    """Yields (source, ip_packet, ihl, icmp_message) for each IPv4 echo request the raw socket sees."""
    while True:
        packet, (source, _) = sock.recvfrom(2048)
        ihl = (packet[0] & 0x0F) * 4
        icmp = packet[ihl:]
        if len(icmp) >= 8 and icmp[0] == 8:
            yield source, packet, ihl, icmp
