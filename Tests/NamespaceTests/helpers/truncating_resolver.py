"""A resolver that misbehaves as issue 54 N29 found one: every UDP question is answered truncated (TC set, nothing
in it), so the stub asks again over TCP, where the connection is accepted and then held silent for good.
Usage: truncating_resolver.py ADDRESS. Prints "ready" once both sockets listen; runs until killed."""
import select
import socket
import sys

address = sys.argv[1]
family = socket.AF_INET6 if ":" in address else socket.AF_INET
udp = socket.socket(family, socket.SOCK_DGRAM)
udp.bind((address, 53))
tcp = socket.socket(family, socket.SOCK_STREAM)
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind((address, 53))
tcp.listen(64)
held = []
print("ready", flush=True)
while True:
    readable, _, _ = select.select([udp, tcp], [], [])
    if udp in readable:
        query, peer = udp.recvfrom(512)
        if len(query) >= 12:
            # The question's ID and question section, QR, TC and RA set (without RA glibc takes a server that
            # answers nothing for a lame one and goes on), no answer.
            flags = 0x8000 | 0x0200 | 0x0080 | (query[2] & 0x01) << 8
            udp.sendto(query[:2] + flags.to_bytes(2, "big") + query[4:6] + b"\0\0\0\0\0\0" + query[12:], peer)
    if tcp in readable:
        connection, _ = tcp.accept()
        held.append(connection)  # never read, never answered, never closed
