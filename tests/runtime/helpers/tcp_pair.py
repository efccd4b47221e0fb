#!/usr/bin/env python3
"""Makes one TCP connection over loopback: listen on 127.0.0.1:PORT (or
[::1]:PORT with -6), connect, send N bytes, close. Loopback only. With
--cookie, prints "accepted COOKIE": the kernel's cookie of the accepted
socket (SO_COOKIE)."""
import socket
import sys

six = "-6" in sys.argv
cookie = "--cookie" in sys.argv
args = [a for a in sys.argv[1:] if a not in ("-6", "--cookie")]
port = int(args[0])
nbytes = int(args[1]) if len(args) > 1 else 0
family, host = (socket.AF_INET6, "::1") if six else (socket.AF_INET, "127.0.0.1")
srv = socket.socket(family, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((host, port))
srv.listen(1)
cli = socket.create_connection((host, port))
acc, _ = srv.accept()
if cookie:
    SO_COOKIE = 57
    print("accepted %d" % int.from_bytes(acc.getsockopt(socket.SOL_SOCKET, SO_COOKIE, 8), sys.byteorder), flush=True)
if nbytes:
    cli.sendall(b"x" * nbytes)
    got = 0
    while got < nbytes:
        got += len(acc.recv(65536))
cli.close()
acc.close()
srv.close()
