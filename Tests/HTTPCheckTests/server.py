"""A loopback HTTP server for HTTPClientTests: answers by path, prints each request's
headers as one JSON line. Usage: server.py (prints its port first)."""
import http.server
import json
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        print(json.dumps({"path": self.path, "headers": [[k, v] for k, v in self.headers.items()]}), flush=True)
        if self.path == "/hang":
            time.sleep(5)
            return
        status, headers, body = {
            "/204": (204, {}, b""),
            "/200": (200, {}, b""),
            "/200body": (200, {"Content-Type": "text/html"}, b"<html>Sign in</html>"),
            "/200big": (200, {}, b"x" * (200 * 1024)),
            "/302": (302, {"Location": "/login?next=1"}, b""),
            "/511": (511, {}, b"network authentication required"),
            "/500": (500, {}, b"oops"),
        }.get(self.path, (404, {}, b""))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
