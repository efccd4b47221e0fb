"""ipecn on pings between two network namespaces sent with the ECN field set
to CE (ping -Q 3; the echo replies carry it back) and to ECT(0) (-Q 2, not
counted): the tool's counts equal the kernel's IpExtInCEPkts / Ip6InCEPkts."""
import re
import subprocess
import unittest

from toolrun import NetnsPair, mount_tracefs, run_tool

CE4, CE6, ECT = 5, 3, 4


def nstat(pair, side, name):
    out = pair.run(side, ["nstat", "-saz", name], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^%s\s+(\d+)" % name, out, re.M)
    return int(m.group(1)) if m else 0


def ping(pair, dst, tos, n, six=False):
    argv = ["ping", "-q", "-c", str(n), "-i", "0.01", "-Q", str(tos), dst] + (["-6"] if six else [])
    pair.run("a", argv, check=True, stdout=subprocess.DEVNULL, timeout=20)


class IpecnTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, pair):
        ping(pair, pair.addr4["b"], 3, CE4)
        ping(pair, pair.addr4["b"], 2, ECT)
        ping(pair, pair.addr6["b"], 3, CE6, six=True)
        ping(pair, pair.addr6["b"], 2, ECT, six=True)

    def counters(self, pair):
        return {(side, name): nstat(pair, side, name) for side in "ab" for name in ("IpExtInCEPkts", "Ip6InCEPkts")}

    def test_events(self):
        with NetnsPair("ecn") as pair:
            before = self.counters(pair)
            run = run_tool(["ipecn"], lambda: self.traffic(pair))
            after = self.counters(pair)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing inbound IP ECN Congestion Experienced. Hit Ctrl-C to end.")
        ours = {}
        for line in run.lines[1:]:
            m = re.match(r"^\d\d:\d\d:\d\d ECN CE from: (\S+)$", line)
            self.assertTrue(m, line)
            ours[m.group(1)] = ours.get(m.group(1), 0) + 1
        # Requests reach b from a, replies reach a from b; every one is CE.
        for side, other in (("b", "a"), ("a", "b")):
            self.assertEqual(after[side, "IpExtInCEPkts"] - before[side, "IpExtInCEPkts"], CE4)
            self.assertEqual(after[side, "Ip6InCEPkts"] - before[side, "Ip6InCEPkts"], CE6)
            self.assertEqual(ours.get(pair.addr4[other]), CE4, run)
            self.assertEqual(ours.get(pair.addr6[other]), CE6, run)

    def test_count_and_family_filters(self):
        for args, v4, v6 in ((["-c"], CE4, CE6), (["-c", "-4"], CE4, None), (["-c", "-6"], None, CE6)):
            with self.subTest(args=args), NetnsPair("ecnc") as pair:
                run = run_tool(["ipecn"] + args, lambda: self.traffic(pair))
                self.assertEqual(run.rc, 0, run)
                self.assertEqual(run.lines[1].split(), ["SADDR", "DADDR", "COUNT"])
                rows = {(r[0], r[1]): int(r[2]) for r in (l.split() for l in run.lines[2:])}
                for fam, want in ((pair.addr4, v4), (pair.addr6, v6)):
                    self.assertEqual(rows.get((fam["a"], fam["b"])), want, run)
                    self.assertEqual(rows.get((fam["b"], fam["a"])), want, run)

    def test_json(self):
        with NetnsPair("ecnj") as pair:
            run = run_tool(["ipecn", "-f", "json"], lambda: self.traffic(pair))
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event")]
        for e in events:
            self.assertEqual(sorted(e), ["saddr", "time"])
            self.assertRegex(e["time"], r"^\d\d:\d\d:\d\d$")
        ours = [e["saddr"] for e in events if e["saddr"] in (pair.addr4["a"], pair.addr4["b"],
                                                             pair.addr6["a"], pair.addr6["b"])]
        self.assertEqual(sorted(ours), sorted([pair.addr4["a"], pair.addr4["b"]] * CE4 +
                                              [pair.addr6["a"], pair.addr6["b"]] * CE6))


if __name__ == "__main__":
    unittest.main()
