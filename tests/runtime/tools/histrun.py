"""Reading the histograms a tool prints: bpftrace's text layout and -f json,
and a sender of UDP datagrams for the packet tools' tests."""
import re

from toolrun import python_in

SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
HEAD = re.compile(r"^(@\w+)(?:\[(.*)\])?:$")
BUCKET = re.compile(r"^(\(\.\.\., (\S+)\)|\[(\S+), (\S+)\)|\[(\S+)\]|\[(\S+), \.\.\.\))\s+(\d+) \|")


def num(s):
    m = re.match(r"^(-?\d+)([KMGTP]?)$", s)
    return int(m.group(1)) * SUFFIX[m.group(2)]


def text_hists(lines):
    """{(name, key): [(low, high, count)]} from the text output: key is the
    text between the brackets ("" for none), high is exclusive (None: open)."""
    out, cur = {}, None
    for line in lines:
        m = HEAD.match(line)
        if m:
            cur = out.setdefault((m.group(1), m.group(2) or ""), [])
            continue
        m = BUCKET.match(line) if cur is not None else None
        if not m:
            cur = None
            continue
        count = int(m.group(7))
        if m.group(2):
            cur.append((None, num(m.group(2)), count))
        elif m.group(3):
            cur.append((num(m.group(3)), num(m.group(4)), count))
        elif m.group(5):
            cur.append((num(m.group(5)), num(m.group(5)) + 1, count))
        else:
            cur.append((num(m.group(6)), None, count))
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
