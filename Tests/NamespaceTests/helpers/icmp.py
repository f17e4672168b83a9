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
