"""Answers ICMP echo requests after a delay (the kernel's own replies are off).
Usage: slow_responder.py DELAY_SECONDS   (runs inside the server namespace until killed)"""
import socket
import struct
import sys
import threading

from icmp import checksum

delay = float(sys.argv[1])
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
print("ready", flush=True)
while True:
    packet, (source, _) = sock.recvfrom(2048)
    ihl = (packet[0] & 0x0F) * 4
    icmp = packet[ihl:]
    if len(icmp) < 8 or icmp[0] != 8:
        continue
    reply = b"\0\0\0\0" + icmp[4:]
    reply = reply[:2] + struct.pack("!H", checksum(reply)) + reply[4:]
    threading.Timer(delay, sock.sendto, (reply, (source, 0))).start()
