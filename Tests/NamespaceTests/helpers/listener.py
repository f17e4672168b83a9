"""Listens on TCP PORT and accepts forever (for the TCP fallback).
Usage: listener.py PORT"""
import socket
import sys

server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("0.0.0.0", int(sys.argv[1])))
server.listen(64)
print("ready", flush=True)
while True:
    connection, _ = server.accept()
    connection.close()
