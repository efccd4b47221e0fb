"""superping on pings between two network namespaces, with identifiers the
test chooses (ping -e): one line per echo answered, with ping's sequence
numbers, and an in-kernel time below ping's own round trip."""
import os
import re
import unittest

from toolrun import NetnsPair, mount_tracefs, run_tool, start_tool

N = 8
# Echo identifiers unlikely to be anyone else's (other pings on the machine show up too).
IDENT = {4: 40000 + os.getpid() % 9000, 6: 50000 + os.getpid() % 9000}
LINE = re.compile(r"^IPv(\d) ping, ID (\d+) seq (\d+): (\d+) us$")


def ping(pair, dst, ident, six=False):
    """Pings dst N times from a; returns {seq: rtt in us} as ping reports it."""
    argv = ["ping", "-c", str(N), "-i", "0.02", "-e", str(ident), dst] + (["-6"] if six else [])
    out = pair.run("a", argv, check=True, capture_output=True, text=True, timeout=20).stdout
    return {int(s): float(t) * 1000 for s, t in re.findall(r"icmp_seq=(\d+) .*time=([\d.]+) ms", out)}


class SuperpingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, pair, rtts, families=(4, 6)):
        if 4 in families:
            rtts[4] = ping(pair, pair.addr4["b"], IDENT[4])
        if 6 in families:
            rtts[6] = ping(pair, pair.addr6["b"], IDENT[6], six=True)

    def ours(self, run, ip):
        """{seq: us} of our pings of family ip."""
        got = {}
        for line in run.lines[1:]:
            m = LINE.match(line)
            self.assertTrue(m, line)
            if int(m.group(1)) == ip and int(m.group(2)) == IDENT[ip]:
                self.assertNotIn(int(m.group(3)), got, run)
                got[int(m.group(3))] = int(m.group(4))
        return got

    def test_latency_below_ping_rtt(self):
        rtts = {}
        with NetnsPair("sping") as pair:
            run = run_tool(["superping"], lambda: self.traffic(pair, rtts))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing ICMP ping latency. Hit Ctrl-C to end.")
        for ip in (4, 6):
            ours = self.ours(run, ip)
            self.assertEqual(sorted(ours), list(range(1, N + 1)), run)
            self.assertEqual(sorted(rtts[ip]), list(range(1, N + 1)))
            # Ping's time spans ours (from before its sendmsg to the reply's
            # receive timestamp), but the reply is stamped when queued to the
            # backlog and seen here when dequeued: allow a little.
            for seq, us in ours.items():
                self.assertLess(us, rtts[ip][seq] + 200, (ip, seq, ours, rtts[ip]))
            self.assertLess(sum(ours.values()), sum(rtts[ip].values()), (ours, rtts[ip]))

    def test_family_filter(self):
        for flag, ip in (("-4", 4), ("-6", 6)):
            with self.subTest(flag=flag), NetnsPair("spingf") as pair:
                run = run_tool(["superping", flag], lambda: self.traffic(pair, {}))
                self.assertEqual(run.rc, 0, run)
                self.assertEqual(len(self.ours(run, ip)), N, run)
                self.assertEqual(len(self.ours(run, 10 - ip)), 0, run)
                for line in run.lines[1:]:
                    self.assertTrue(line.startswith("IPv%d " % ip), line)

    def test_json(self):
        with NetnsPair("spingj") as pair:
            run = run_tool(["superping", "-f", "json"], lambda: self.traffic(pair, {}, families=(4,)))
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event") if m["data"]["id"] == IDENT[4]]
        self.assertEqual(len(events), N, run)
        for e in events:
            self.assertEqual(sorted(e), ["id", "ip", "seq", "us"])
            self.assertEqual(e["ip"], 4)
            self.assertIsInstance(e["us"], int)
        self.assertEqual(sorted(e["seq"] for e in events), list(range(1, N + 1)))


if __name__ == "__main__":
    unittest.main()
