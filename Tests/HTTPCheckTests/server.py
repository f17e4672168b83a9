"""An HTTP(S) server for the check's tests: answers by path, prints each request's headers as
one JSON line. Usage: server.py [--bind ADDR] [--port N] [--tls CERT KEY] [--capport-file F]
[--always-204] (prints its port first).

/echo answers 204 with the request's X-Netobserver-Nonce in X-Netobserver-Echo (the echo rule);
/capport serves the captive-portal API's JSON from --capport-file, read at each request (a test
changes the file to change the answer); --always-204 answers 204 to everything (an interceptor)."""
import argparse
import http.server
import json
import socket
import ssl
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--bind", default="127.0.0.1")
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
parser.add_argument("--capport-file")
parser.add_argument("--always-204", action="store_true")
options = parser.parse_args()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        print(json.dumps({"path": self.path, "headers": [[k, v] for k, v in self.headers.items()]}), flush=True)
        path = self.path.split("?")[0]
        if options.always_204:
            return self.answer(204, {}, b"")
        if path == "/hang":
            time.sleep(5)
            return
        if path == "/echo":
            nonce = self.headers.get("X-Netobserver-Nonce", "")
            return self.answer(204, {"X-Netobserver-Echo": nonce} if nonce else {}, b"")
        if path == "/capport" and options.capport_file:
            with open(options.capport_file, "rb") as f:
                body = f.read()
            if body.startswith(b"HANG"):
                time.sleep(30)
                return
            if body.startswith(b"STATUS "):
                return self.answer(int(body.split()[1]), {}, b"")
            return self.answer(200, {"Content-Type": "application/captive+json", "Cache-Control": "private"}, body)
        status, headers, body = {
            "/204": (204, {}, b""),
            "/200": (200, {}, b""),
            "/200body": (200, {"Content-Type": "text/html"}, b"<html>Sign in</html>"),
            "/200big": (200, {}, b"x" * (200 * 1024)),
            "/302": (302, {"Location": "/login?next=1"}, b""),
            "/511": (511, {}, b"network authentication required"),
            "/500": (500, {}, b"oops"),
            "/json": (200, {"Content-Type": "application/captive+json"}, b'{"captive": false}'),
        }.get(path, (404, {}, b""))
        self.answer(status, headers, body)

    def answer(self, status, headers, body):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6 if ":" in options.bind else socket.AF_INET
    daemon_threads = True


server = Server((options.bind, options.port), Handler)
if options.tls:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(options.tls[0], options.tls[1])
    server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
