#!/usr/bin/env python3
"""Makes TCP connections between two network namespaces joined by a veth pair.

  netns_pair.py PORT

creates namespaces bpfs_srv_<pid> (10.231.0.1, fd31::1) and bpfs_cli_<pid>
(10.231.0.2, fd31::2), connects from the client namespace to PORT on the
server's IPv4 then IPv6 address, and deletes both namespaces (and so the
veths) again, also on failure. Private addresses only, never routed out.
"""
import os
import socket
import subprocess
import sys

SERVER = {4: "10.231.0.1", 6: "fd31::1"}
CLIENT = {4: "10.231.0.2", 6: "fd31::2"}


def ip(*args):
    subprocess.run(["ip", *args], check=True)


def serve(port):
    socks = []
    for fam, host in ((socket.AF_INET, SERVER[4]), (socket.AF_INET6, SERVER[6])):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(1)
        socks.append(s)
    print("ready", flush=True)
    for s in socks:
        conn, _ = s.accept()
        conn.recv(16)
        conn.close()
        s.close()


def connect(port):
    for host in (SERVER[4], SERVER[6]):
        c = socket.create_connection((host, port), timeout=5)
        c.sendall(b"ping")
        c.close()


def main():
    if sys.argv[1] in ("--serve", "--connect"):
        (serve if sys.argv[1] == "--serve" else connect)(int(sys.argv[2]))
        return
    port = sys.argv[1]
    srv, cli = f"bpfs_srv_{os.getpid()}", f"bpfs_cli_{os.getpid()}"
    me = os.path.abspath(__file__)
    try:
        ip("netns", "add", srv)
        ip("netns", "add", cli)
        ip("link", "add", "bpfs_v0", "netns", srv, "type", "veth", "peer", "name", "bpfs_v1", "netns", cli)
        for ns, dev, addrs in ((srv, "bpfs_v0", SERVER), (cli, "bpfs_v1", CLIENT)):
            ip("-n", ns, "addr", "add", addrs[4] + "/24", "dev", dev)
            ip("-n", ns, "addr", "add", addrs[6] + "/64", "dev", dev, "nodad")
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        server = subprocess.Popen(["ip", "netns", "exec", srv, sys.executable, me, "--serve", port],
                                  stdout=subprocess.PIPE, text=True)
        try:
            if server.stdout.readline().strip() != "ready":
                raise SystemExit("server did not start")
            subprocess.run(["ip", "netns", "exec", cli, sys.executable, me, "--connect", port], check=True)
            server.wait(timeout=10)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
    finally:
        for ns in (srv, cli):
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
