"""tcpconnect and tcpconnlat on connects made between two network namespaces:
successful ones to a listening port, refused ones to a closed port."""
import subprocess
import unittest

from toolrun import NetnsPair, mount_tracefs, python_in, run_tool

# Listens on PORT in its namespace and accepts until killed.
LISTEN = r"""
import socket, sys
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(64)
print("ready", flush=True)
while True:
    c, _ = s.accept(); c.close()
"""

# Connects N times to HOST:PORT; prints its pid and how many succeeded.
CONNECT = r"""
import os, socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
ok = 0
for _ in range(n):
    c = socket.socket(fam, socket.SOCK_STREAM)
    try:
        c.connect((host, port)); ok += 1
    except OSError:
        pass
    c.close()
print(os.getpid(), ok, flush=True)
"""


class Connects:
    """A listener on 5201 in namespace a; connects from b."""

    def __init__(self, pair):
        self.pair = pair
        self.listener = python_in(pair, "a", LISTEN, pair.addr4["a"], 5201, stdout=subprocess.PIPE, text=True)
        assert self.listener.stdout.readline().strip() == "ready"

    def connect(self, port, n, six=False):
        host = self.pair.addr6["a"] if six else self.pair.addr4["a"]
        out = python_in(self.pair, "b", CONNECT, host, port, n, stdout=subprocess.PIPE, text=True).communicate(
            timeout=30)[0].split()
        return int(out[0]), int(out[1])

    def close(self):
        self.listener.kill()
        self.listener.wait()


class TcpconnectTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, pair, results):
        conns = Connects(pair)
        try:
            results.append(conns.connect(5201, 3))
            results.append(conns.connect(5202, 2))  # refused: nothing listens
        finally:
            conns.close()

    def test_events(self):
        results = []
        with NetnsPair("conn") as pair:
            run = run_tool(["tcpconnect", "-U", "-t"], lambda: self.traffic(pair, results))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(results[0][1], 3)
        self.assertEqual(results[1][1], 0)
        self.assertEqual(run.lines[0].split(), ["TIME(s)", "UID", "PID", "COMM", "IP", "SADDR", "DADDR", "DPORT"])
        got = [l.split() for l in pair.mine(run.lines[1:])]
        want = [[str(results[0][0]), "python3", "4", pair.addr4["b"], pair.addr4["a"], "5201"]] * 3 + \
               [[str(results[1][0]), "python3", "4", pair.addr4["b"], pair.addr4["a"], "5202"]] * 2
        self.assertEqual([r[2:] for r in got], want, run)
        for r in got:
            self.assertRegex(r[0], r"^\d+\.\d{3}$")
            self.assertEqual(r[1], "0")

    def test_port_filter_and_count_mode(self):
        results = []
        with NetnsPair("connc") as pair:
            run = run_tool(["tcpconnect", "-c"], lambda: self.traffic(pair, results))
            filtered = run_tool(["tcpconnect", "-P", "5202"], lambda: self.traffic(pair, []))
        self.assertEqual(run.rc, 0, run)
        # -c prints at the end only: bcc's banner says that it runs.
        self.assertEqual(run.lines[0], "Tracing connect ... Hit Ctrl-C to end", run)
        self.assertEqual(run.lines[1].split(), ["LADDR", "RADDR", "RPORT", "CONNECTS"])
        rows = sorted(l.split() for l in pair.mine(run.lines[1:]))
        a, b = pair.addr4["a"], pair.addr4["b"]
        self.assertEqual(rows, [[b, a, "5201", "3"], [b, a, "5202", "2"]], run)
        self.assertEqual([l.split()[-1] for l in pair.mine(filtered.lines[1:])], ["5202", "5202"], filtered)

    def test_json(self):
        with NetnsPair("connj") as pair:
            run = run_tool(["tcpconnect", "-f", "json"], lambda: self.traffic(pair, []))
        events = [m["data"] for m in run.json("event") if m["data"]["daddr"] == pair.addr4["a"]]
        self.assertEqual(len(events), 5, run)
        self.assertEqual(sorted(events[0]), sorted(["pid", "comm", "ip", "saddr", "daddr", "dport"]))
        self.assertEqual(sorted(e["dport"] for e in events), [5201] * 3 + [5202] * 2)


class TcpconnlatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_latency_lines(self):
        results = []
        with NetnsPair("clat") as pair:
            def traffic():
                conns = Connects(pair)
                try:
                    results.append(conns.connect(5201, 4))
                    conns.connect(5202, 2)  # refused: no latency line
                finally:
                    conns.close()
            run = run_tool(["tcpconnlat", "-L"], traffic)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0].split(), ["PID", "COMM", "IP", "SADDR", "LPORT", "DADDR", "DPORT", "LAT(ms)"])
        got = [l.split() for l in pair.mine(run.lines[1:])]
        self.assertEqual(len(got), 4, run)
        for r in got:
            self.assertEqual(r[0], str(results[0][0]))
            self.assertEqual(r[2:4], ["4", pair.addr4["b"]])
            self.assertEqual(r[5:7], [pair.addr4["a"], "5201"])
            self.assertGreater(int(r[4]), 1024)
            self.assertLess(float(r[7]), 1000.0)

    def test_min_ms_filters_everything_fast(self):
        with NetnsPair("clatm") as pair:
            def traffic():
                conns = Connects(pair)
                try:
                    conns.connect(5201, 3)
                finally:
                    conns.close()
            run = run_tool(["tcpconnlat", "1000"], traffic)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(pair.mine(run.lines), [], run)


if __name__ == "__main__":
    unittest.main()
