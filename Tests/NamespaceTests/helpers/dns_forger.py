"""A nameserver that answers every A query with an address, but never rightly: `wrong-id` flips the
query's ID, `wrong-question` answers another name. A resolver library must believe neither.
Usage: dns_forger.py ADDRESS MODE   (runs until killed; prints "ready" and one line per query)"""
import socket
import struct
import sys

address, mode = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((address, 53))
print("ready", flush=True)


def question_end(packet):
    offset = 12
    while offset < len(packet) and packet[offset] != 0:
        offset += packet[offset] + 1
    return offset + 1 + 4


while True:
    query, source = sock.recvfrom(512)
    if len(query) < 17:
        continue
    (ident,) = struct.unpack("!H", query[:2])
    end = question_end(query)
    question = query[12:end]
    if mode == "wrong-id":
        ident ^= 0xFFFF
    else:
        question = b"\x06forged\x04test\x00" + question[-4:]
    header = struct.pack("!HHHHHH", ident, 0x8180, 1, 1, 0, 0)
    answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + bytes([198, 18, 0, 99])
    sock.sendto(header + question + answer, source)
    print("forged", mode, flush=True)
