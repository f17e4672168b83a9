"""Answers each ICMP echo request with a Destination Unreachable (host unreachable) instead of
a reply (the kernel's own replies are off), quoting the request's IP header and either only
the first 8 bytes of its ICMP message (RFC 792's minimum: no payload, so no token) or all of it.
Usage: unreachable_responder.py short|whole   (runs inside the server namespace until killed)"""
import socket
import struct
import sys

from icmp import checksum, echo_requests

whole = sys.argv[1] == "whole"
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
print("ready", flush=True)
for source, packet, ihl, _ in echo_requests(sock):
    quoted = packet if whole else packet[:ihl + 8]
    error = struct.pack("!BBHI", 3, 1, 0, 0) + quoted
    error = error[:2] + struct.pack("!H", checksum(error)) + error[4:]
    sock.sendto(error, (source, 0))
