"""An HTTP server for the connectivity tests, answering every GET the same way.
Usage: check_server.py ADDRESS PORT MODE [LOCATION]
MODE: 204 (the Internet), 302 (a portal redirecting to LOCATION), 200body (a portal's
login page), 511, 500, hang (accepts and never answers). Prints "ready", then a line per
connection ("CONNECTION") and per request ("GET path host")."""
import http.server
import sys
import time

address, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
location = sys.argv[4] if len(sys.argv) > 4 else ""


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        print("CONNECTION", flush=True)
        super().setup()

    def do_GET(self):
        print("GET", self.path, self.headers.get("Host", ""), flush=True)
        if mode == "hang":
            time.sleep(30)
            return
        status = {"204": 204, "302": 302, "200body": 200, "511": 511, "500": 500}[mode]
        body = b"<html><body>Sign in here</body></html>" if mode in ("200body", "511") else b""
        self.send_response(status)
        if mode == "302":
            self.send_header("Location", location)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    address_family = __import__("socket").AF_INET6 if ":" in address else __import__("socket").AF_INET
    allow_reuse_address = True
    daemon_threads = True

    def server_bind(self):
        # HTTPServer's own asks the resolver for the address's name (getfqdn) between bind and listen: in a
        # namespace whose resolver cannot be reached that takes seconds, and connections meanwhile are refused.
        __import__("socketserver").TCPServer.server_bind(self)
        self.server_name, self.server_port = address, port


server = Server((address, port), Handler)
print("ready", flush=True)
server.serve_forever()
