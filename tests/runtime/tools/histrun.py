"""Reading the histograms a tool prints: bpftrace's text layout and -f json,
and a sender of UDP datagrams for the packet tools' tests."""
import re
import subprocess

from toolrun import python_in

HEADER = re.compile(r"^\s+(\S+)\s+: count\s+distribution$")
ROW = re.compile(r"^\s*(\d+) -> (\d+)\s+: (\d+)\s+\|")


def text_hists(lines):
    """{(unit, key): [(low, high, count)]} from the tools' text output,
    libbpf-tools' log2 tables: the unit is the map's name without @, the key
    the record's "name = value, ..." line before a keyed table ("" for none);
    high is exclusive."""
    out, cur, prev = {}, None, ""
    for line in lines:
        m = HEADER.match(line)
        if m:
            key = prev if " = " in prev else ""
            cur = out.setdefault((m.group(1), key), [])
        else:
            m = ROW.match(line)
            if m and cur is not None:
                cur.append((int(m.group(1)), int(m.group(2)) + 1, int(m.group(3))))
            else:
                cur = None
        prev = line
    return out


def json_hists(run):
    """{(name, key): [(low, high, count)]} from -f json hist messages, in the
    same form (key "" for an unkeyed map; high exclusive)."""
    out = {}
    for msg in run.json("hist"):
        for name, val in msg["data"].items():
            for key, buckets in (val.items() if isinstance(val, dict) else [("", val)]):
                out[(name, key)] = [(b.get("min"), b["max"] + 1 if "max" in b else None, b["count"])
                                    for b in buckets]
    return out


def total(buckets, low=None, high=None):
    """The count of the buckets within [low, high)."""
    return sum(c for lo, hi, c in buckets
               if (low is None or (lo is not None and lo >= low)) and (high is None or (hi is not None and hi <= high)))


UDP_SEND = r"""
import socket, sys
host, port, size, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_DGRAM)
for _ in range(n):
    s.sendto(b"u" * size, (host, port))
s.close()
"""


def udp_send(pair, side, host, port, size, n):
    """Sends n datagrams of size bytes from side to host:port; returns when sent."""
    p = python_in(pair, side, UDP_SEND, host, port, size, n)
    assert p.wait(timeout=20) == 0


UDP_SINK = r"""
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
s.bind((host, port))
print("ready", flush=True)
while True:
    s.recv(65536)
"""


class UdpSink:
    """Reads datagrams to host:port in a namespace of `pair` (so that none is
    answered with an ICMP error) until the with block ends."""

    def __init__(self, pair, side, host, port):
        self.proc = python_in(pair, side, UDP_SINK, host, port, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


def tx_packets(pair, side):
    """The packets side's veth has sent, from `ip -s link`."""
    out = pair.run(side, ["ip", "-s", "link", "show", pair.dev[side]], capture_output=True, text=True,
                   check=True).stdout
    return int(re.search(r"TX:.*\n\s*\d+\s+(\d+)", out).group(1))
