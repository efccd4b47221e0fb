"""skbdrop on UDP datagrams sent to a closed port in another network
namespace: each is dropped with reason NO_SOCKET in the UDP receive path,
as many as the receiver's UdpNoPorts counter says."""
import re
import unittest

from histrun import udp_send
from toolrun import NetnsPair, mount_tracefs, run_tool

N = 25


def nostat(pair):
    out = pair.run("b", ["nstat", "-saz", "UdpNoPorts"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^UdpNoPorts\s+(\d+)", out, re.M)
    return int(m.group(1)) if m else 0


class SkbdropTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, pair, counted):
        before = nostat(pair)
        udp_send(pair, "a", pair.addr4["b"], 7201, 100, N)
        counted.append(nostat(pair) - before)

    def test_stacks(self):
        counted = []
        with NetnsPair("sdrop") as pair:
            run = run_tool(["skbdrop"], lambda: self.traffic(pair, counted))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(counted, [N])
        self.assertEqual(run.lines[0], "Tracing skb drops by reason and stack. Hit Ctrl-C to end.")
        # "@[REASON, " then the frames, then "]: COUNT".
        text = "\n".join(run.lines[1:])
        entries = re.findall(r"^@\[(\w+), \n((?:        \S+\n)+)\]: (\d+)$", text, re.M)
        self.assertTrue(entries, run)
        udp = [int(c) for reason, stack, c in entries if "__udp4_lib_rcv" in stack]
        self.assertTrue(udp, run)
        for reason, stack, c in entries:
            if "__udp4_lib_rcv" in stack:
                self.assertEqual(reason, "SKB_DROP_REASON_NO_SOCKET", run)
                self.assertLessEqual(len(stack.splitlines()), 8)
        # Others' UDP to closed ports may add a few.
        self.assertGreaterEqual(sum(udp), N, run)
        self.assertLess(sum(udp), N + 50, run)

    def test_reasons(self):
        counted = []
        with NetnsPair("sdropr") as pair:
            run = run_tool(["skbdrop", "-r"], lambda: self.traffic(pair, counted))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[1].split(), ["REASON", "COUNT"])
        rows = dict((r[0], int(r[1])) for r in (l.split() for l in run.lines[2:]))
        self.assertGreaterEqual(rows.get("SKB_DROP_REASON_NO_SOCKET", 0), N, run)
        for reason in rows:
            self.assertTrue(reason.startswith("SKB_DROP_REASON_"), run)

    def test_json(self):
        with NetnsPair("sdropj") as pair:
            run = run_tool(["-f", "json", "skbdrop"], lambda: self.traffic(pair, []))
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event")]
        self.assertTrue(events, run)
        for e in events:
            self.assertEqual(sorted(e), ["count", "kstack", "reason"])
            self.assertIsInstance(e["reason"], int)
        udp = [e for e in events if "__udp4_lib_rcv" in str(e["kstack"])]
        self.assertGreaterEqual(sum(e["count"] for e in udp), N, run)


if __name__ == "__main__":
    unittest.main()
