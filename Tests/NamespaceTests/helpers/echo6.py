"""One ICMPv6 echo to the address given (the system may have no ping): exit 0 on its reply
within a second, 1 otherwise. Run as root in the sender's namespace."""
import socket
import struct
import sys
import time

sock = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
sock.settimeout(1)
sock.sendto(struct.pack("!BBHHH", 128, 0, 0, 0x6e6f, 1) + b"netobserver test", (sys.argv[1], 0))
deadline = time.time() + 1
while time.time() < deadline:
    try:
        data, _ = sock.recvfrom(1500)
    except socket.timeout:
        break
    if len(data) >= 8 and data[0] == 129 and struct.unpack("!H", data[4:6])[0] == 0x6e6f:
        print("reply")
        sys.exit(0)
sys.exit(1)
