"""Sends ICMP echo replies with random sequences and payloads to TARGET for SECONDS, with
IDENTIFIER (so they pass the prober's kernel filter) or random identifiers, at most RATE
packets a second when given (else as fast as python sends).
Usage: foreign_flood.py TARGET SECONDS [IDENTIFIER [RATE]]"""
import os
import socket
import struct
import sys
import time

from icmp import checksum



target, seconds = sys.argv[1], float(sys.argv[2])
identifier = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None
rate = float(sys.argv[4]) if len(sys.argv) > 4 else None
start = time.monotonic()
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
end = time.monotonic() + seconds
i = 0
while time.monotonic() < end:
    if rate and i >= (time.monotonic() - start) * rate:
        time.sleep(0.001)
        continue
    i += 1
    ident = identifier if identifier is not None else int.from_bytes(os.urandom(2), "big")
    body = struct.pack("!HH", ident, i & 0xFFFF) + os.urandom(16)
    packet = b"\0\0\0\0" + body
    packet = packet[:2] + struct.pack("!H", checksum(packet)) + packet[4:]
    try:
        sock.sendto(packet, (target, 0))
    except BlockingIOError:
        pass
print("sent", i)
