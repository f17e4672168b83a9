"""Answers ICMP echo requests after a delay (the kernel's own replies are off).
Usage: slow_responder.py DELAY_SECONDS   (runs inside the server namespace until killed)"""
import socket
import struct
import sys
import threading

from icmp import checksum, echo_requests

delay = float(sys.argv[1])
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
print("ready", flush=True)
for source, _, _, icmp in echo_requests(sock):
    reply = b"\0\0\0\0" + icmp[4:]
    reply = reply[:2] + struct.pack("!H", checksum(reply)) + reply[4:]
    threading.Timer(delay, sock.sendto, (reply, (source, 0))).start()
