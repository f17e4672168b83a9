"""This machine's own traffic, for the traffic-evidence tests and bench.

  load.py serve PORT                 echo server: sends back whatever each connection sends
  load.py client PORT ADDRESS...     one connection per ADDRESS, each sending 256 bytes every
                                     50 ms and reading the echo (a request/response stream, so a
                                     dead path shows as retransmissions here)
  load.py idle PORT ADDRESS COUNT    COUNT established connections to ADDRESS that send nothing

Prints "ready" once listening or connected; runs until killed. A connection that breaks is
opened again every second."""
import resource
import select
import selectors
import socket
import sys
import time

# Room for the bench's 10,000 connections, as far as the hard limit allows.
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard == resource.RLIM_INFINITY else min(hard, 65536), hard))


def serve(port):
    # Dual-stack: IPv4 clients arrive v4-mapped, IPv6 ones as they are.
    server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    server.bind(("::", port))
    server.listen(4096)
    server.setblocking(False)
    watched = selectors.DefaultSelector()
    watched.register(server, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for key, _ in watched.select(1):
            s = key.fileobj
            if s is server:
                try:
                    connection, _ = server.accept()
                    connection.setblocking(False)
                    watched.register(connection, selectors.EVENT_READ)
                except OSError:
                    pass
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                watched.unregister(s)
                s.close()
                continue
            try:
                s.send(data)
            except OSError:
                pass


def connect(address, port):
    try:
        s = socket.create_connection((address, port), timeout=1)
        s.setblocking(False)
        return s
    except OSError:
        return None


def client(port, addresses):
    connections = {address: connect(address, port) for address in addresses}
    print("ready", flush=True)
    payload = b"x" * 256
    next_retry = time.monotonic() + 1
    while True:
        live = [s for s in connections.values() if s is not None]
        for s in live:
            try:
                s.send(payload)
            except BlockingIOError:
                pass
            except OSError:
                for address, c in connections.items():
                    if c is s:
                        connections[address] = None
                s.close()
        deadline = time.monotonic() + 0.05
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            live = [s for s in connections.values() if s is not None]
            readable, _, _ = select.select(live, [], [], left) if live else ([], [], time.sleep(left))
            for s in readable:
                try:
                    s.recv(65536)
                except OSError:
                    pass
        if time.monotonic() >= next_retry:
            next_retry = time.monotonic() + 1
            for address, s in connections.items():
                if s is None:
                    connections[address] = connect(address, port)


def idle(port, address, count):
    held = []
    for _ in range(count):
        s = connect(address, port)
        if s is not None:
            held.append(s)
    print("ready %d" % len(held), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    mode, port = sys.argv[1], int(sys.argv[2])
    if mode == "serve":
        serve(port)
    elif mode == "client":
        client(port, sys.argv[3:])
    else:
        idle(port, sys.argv[3], int(sys.argv[4]))
