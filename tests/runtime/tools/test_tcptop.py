"""tcptop on known TCP sessions made by a process of its own command name on
the loopback of a network namespace: each side's RX_KB and TX_KB, summed over
the intervals, are the bytes it sent and received."""
import json
import os
import re
import unittest

from socktraffic import Actor
from toolrun import Cgroup, NetnsPair, mount_tracefs, run_tool

# An IPv4 and an IPv6 session: the client sends UP KiB in one sendall, the
# server receives them in one recv (MSG_WAITALL), then replies DOWN KiB the
# same way; every sendmsg and recvmsg moves a whole number of KiB, so the KB
# columns add up exactly whatever the interval boundaries. Prints
# [[family, client port, server port, up, down], ...].
TRAFFIC = r"""
out = []
for fam, host, port, up, down in ((socket.AF_INET, "127.0.0.1", 7101, 200, 40),
                                  (socket.AF_INET6, "::1", 7102, 100, 8)):
    l = socket.socket(fam, socket.SOCK_STREAM)
    l.bind((host, port)); l.listen(4)
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.connect((host, port))
    a, _ = l.accept()
    c.sendall(b"x" * (up * 1024))
    assert len(a.recv(up * 1024, socket.MSG_WAITALL)) == up * 1024
    a.sendall(b"y" * (down * 1024))
    assert len(c.recv(down * 1024, socket.MSG_WAITALL)) == down * 1024
    out.append([int(fam), c.getsockname()[1], port, up, down])
    c.close(); a.close(); l.close()
print(json.dumps(out))
"""


def endpoint(fam, port):
    return "127.0.0.1:%d" % port if fam == 2 else "[::1]:%d" % port


class TcptopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, args, cgroup=None):
        """Runs tcptop `args` -p PID around TRAFFIC (with a Cgroup: the actor
        in its child and -c of the cgroup, no -p); returns (run, actor,
        sessions)."""
        with NetnsPair("ttop") as pair:
            actor = Actor(pair, "a", "bstt%d" % (os.getpid() % 100000), TRAFFIC)
            out = []
            try:
                if cgroup:
                    cgroup.move(actor.pid)
                    args = ["-c", cgroup.path] + args
                else:
                    args = ["-p", str(actor.pid)] + args
                run = run_tool(["tcptop"] + args, lambda: out.extend(actor.go()), settle=2.2)
            finally:
                actor.kill()
        self.assertEqual(run.rc, 0, run)
        return run, actor, json.loads(out[-1])

    def expected(self, actor, sessions):
        rows = {}
        for fam, cport, sport, up, down in sessions:
            client, server = endpoint(fam, cport), endpoint(fam, sport)
            rows[(client, server)] = {"rx_kb": down, "tx_kb": up}
            rows[(server, client)] = {"rx_kb": up, "tx_kb": down}
        return rows

    def summed(self, run, actor):
        """The JSON tables' rows summed over the intervals, by (laddr, raddr)."""
        rows = {}
        tables = run.json("table")
        self.assertGreater(len(tables), 0, run)
        for t in tables:
            for r in t["data"]:
                self.assertEqual((r["pid"], r["comm"]), (actor.pid, actor.comm), run)
                s = rows.setdefault((r["laddr"], r["raddr"]), {"rx_kb": 0, "tx_kb": 0})
                s["rx_kb"] += r["rx_kb"]
                s["tx_kb"] += r["tx_kb"]
        return rows, tables

    def test_json_rows_are_the_bytes_moved(self):
        run, actor, sessions = self.traffic(["-C", "-f", "json", "1"])
        rows, _ = self.summed(run, actor)
        self.assertEqual(rows, self.expected(actor, sessions), run)

    def test_cgroup(self):
        with Cgroup("tcptop") as cg:
            run, actor, sessions = self.traffic(["-C", "-f", "json", "1"], cgroup=cg)
        rows, _ = self.summed(run, actor)  # every row is the actor's
        self.assertEqual(rows, self.expected(actor, sessions), run)

    def test_sort_by_sent_or_received(self):
        # The IPv4 client sends 200 KiB and receives 40; its server the
        # reverse. Each table is in the order of the column -s names.
        for sort, column in (("sent", "tx_kb"), ("received", "rx_kb")):
            run, actor, sessions = self.traffic(["-C", "-4", "-s", sort, "-f", "json", "1"])
            rows, tables = self.summed(run, actor)
            self.assertEqual(rows, {k: v for k, v in self.expected(actor, sessions).items()
                                    if not k[0].startswith("[")}, run)
            for t in tables:
                values = [r[column] for r in t["data"]]
                self.assertEqual(values, sorted(values, reverse=True), run)
            # The traffic takes milliseconds from the start, far from the
            # first interval's end: both rows are in one table, 200 first.
            self.assertIn([200, 40], [[r[column] for r in t["data"]] for t in tables], run)

    def test_ipv4_only_and_rows_limit(self):
        run, actor, sessions = self.traffic(["-C", "-4", "-r", "1", "-f", "json", "1"])
        rows, tables = self.summed(run, actor)
        for t in tables:
            self.assertLessEqual(len(t["data"]), 1, run)
        want = {k: v for k, v in self.expected(actor, sessions).items() if not k[0].startswith("[")}
        # One row per interval: the busier session shows first, so each of the
        # two IPv4 rows shows in full unless both moved data in one interval.
        self.assertTrue(set(rows) <= set(want) and rows, run)
        for k, v in rows.items():
            self.assertLessEqual(v["rx_kb"], want[k]["rx_kb"], run)
            self.assertLessEqual(v["tx_kb"], want[k]["tx_kb"], run)

    def test_text_layout(self):
        run, actor, sessions = self.traffic(["-C", "1"])
        self.assertEqual(run.lines[0], "Tracing... Output every 1 secs. Hit Ctrl-C to end", run)
        self.assertRegex(run.lines[1], r"^\d\d:\d\d:\d\d loadavg: \d+\.\d\d \d+\.\d\d \d+\.\d\d \d+/\d+ \d+$", run)
        self.assertIn("PID    COMM         LADDR                 RADDR                  RX_KB  TX_KB", run.lines, run)
        fam, cport, sport, up, down = sessions[0]
        rows = [l for l in run.lines if re.match(r"^%d\s+%s\s+127\.0\.0\.1:%d\s+127\.0\.0\.1:%d\s+\d+\s+\d+$" %
                                                 (actor.pid, actor.comm[:12], cport, sport), l)]
        self.assertTrue(rows, run)
        # Columns stay aligned: in each interval's table, an IPv6 address
        # widens its column for the header and every row alike.
        widths = []
        for i, l in enumerate(run.lines):
            if l.startswith("PID "):
                for row in run.lines[i + 1:]:
                    if not row:
                        break
                    self.assertEqual(len(row), len(l), run)
                widths.append(len(l))
        self.assertIn(len("PID    COMM         LADDR                 RADDR                  RX_KB  TX_KB"), widths, run)

    def test_clears_the_screen_without_C(self):
        run, _, _ = self.traffic(["1"])
        self.assertTrue(any("\033[H\033[2J" in l for l in run.lines), run)


if __name__ == "__main__":
    unittest.main()
