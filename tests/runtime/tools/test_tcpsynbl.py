"""tcpsynbl on a listener that never accepts: its accept queue fills past
its limit, the histogram holds one entry per queued connection, and the
overflow line appears as the kernel counts ListenOverflows."""
import json
import re
import subprocess
import time
import unittest

from blockio import run_counted
from toolrun import NetnsPair, mount_tracefs, python_in, run_tool

# listen(BACKLOG) on HOST:PORT, never accept; print "ready", then wait.
STUCK = r"""
import socket, sys, time
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(int(sys.argv[3]))
print("ready", flush=True)
time.sleep(30)
"""

# N non-blocking connects to HOST:PORT, held open for a moment.
CONNECTS = r"""
import socket, sys, time
fam = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
socks = []
for _ in range(int(sys.argv[3])):
    c = socket.socket(fam, socket.SOCK_STREAM); c.setblocking(False)
    c.connect_ex((sys.argv[1], int(sys.argv[2]))); socks.append(c)
    time.sleep(0.02)
time.sleep(0.5)
"""


def overflows(pair):
    out = pair.run("a", ["nstat", "-saz", "TcpExtListenOverflows"], capture_output=True, text=True).stdout
    m = re.search(r"TcpExtListenOverflows\s+(\d+)", out)
    return int(m.group(1)) if m else 0


class TcpsynblTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def fill(self, pair, host, port, backlog, n):
        srv = python_in(pair, "a", STUCK, host, port, backlog, stdout=subprocess.PIPE, text=True)
        assert srv.stdout.readline().strip() == "ready"
        python_in(pair, "b", CONNECTS, host, port, n).wait(timeout=30)
        return srv

    def test_queue_overflow(self):
        with NetnsPair("synbl") as pair:
            srv = None
            def traffic():
                nonlocal srv
                srv = self.fill(pair, pair.addr4["a"], 5501, 2, 12)
            try:
                run = run_tool(["tcpsynbl", "-4"], traffic)
                self.assertGreater(overflows(pair), 0)
            finally:
                if srv:
                    srv.kill()
                    srv.wait()
        self.assertEqual(run.rc, 0, run)
        # The queue takes max + 1 = 3 connections: lengths 1, 2 and 3.
        text = "\n".join(run.lines)
        self.assertEqual(run.lines[0], "Tracing SYN backlog size. Ctrl-C to end.")
        self.assertIn("port = 5501, backlog_max = 2\n"
                      "     backlog             : count    distribution\n"
                      "         0 -> 1          : 1        |********************                    |\n"
                      "         2 -> 3          : 2        |****************************************|", text)
        self.assertRegex(text, r"\d\d:\d\d:\d\d port 5501: backlog 3 over its limit 2, dropping SYNs")

    def test_intervals_and_json(self):
        with NetnsPair("synblj") as pair:
            srv = None
            def traffic():
                nonlocal srv
                srv = self.fill(pair, pair.addr6["a"], 5502, 8, 3)
                time.sleep(1.2)
            try:
                # The tool ends by itself after its two intervals.
                run = run_counted(["tcpsynbl", "-f", "json", "-T", "1", "2"], traffic)
            finally:
                if srv:
                    srv.kill()
                    srv.wait()
        self.assertEqual(run.rc, 0, run)
        msgs = [json.loads(l) for l in run.lines]
        # Other listeners on the machine may show too: only port 5502 counts.
        mine = [buckets for m in msgs if m["type"] == "hist"
                for key, buckets in m["data"]["@backlog"].items() if key.startswith("{.port=5502,")]
        self.assertEqual(len(mine), 1, run)
        self.assertEqual(sum(b["count"] for b in mine[0]), 3, run)
        self.assertEqual(len([m for m in msgs if m["type"] == "time"]), 2, run)


if __name__ == "__main__":
    unittest.main()
