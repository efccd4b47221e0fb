"""nettxlat on UDP datagrams and pings between two network namespaces: the
packets in a veth's histogram equal what the device sent (ip -s link), from
the driver call (default) or from the queue (-Q), and pings' requests reach
their release (-c)."""
import subprocess
import unittest

from histrun import UdpSink, json_hists, text_hists, total, tx_packets, udp_send
from toolrun import NetnsPair, mount_tracefs, run_tool

N_OUT, N_IN, PINGS = 30, 20, 10


class NettxlatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def pair(self, tag):
        pair = NetnsPair(tag, unique=True).__enter__()
        self.addCleanup(pair.__exit__, None, None, None)
        pair.run("a", ["ping", "-c1", "-q", pair.addr4["b"]], check=True, stdout=subprocess.DEVNULL)
        return pair

    def udp(self, pair, sent):
        before = {s: tx_packets(pair, s) for s in "ab"}
        with UdpSink(pair, "b", pair.addr4["b"], 7101), UdpSink(pair, "a", pair.addr4["a"], 7102):
            udp_send(pair, "a", pair.addr4["b"], 7101, 500, N_OUT)
            udp_send(pair, "b", pair.addr4["a"], 7102, 500, N_IN)
        for s in "ab":
            sent[s] = tx_packets(pair, s) - before[s]

    def check_counts(self, args, tag):
        pair, sent = self.pair(tag), {}
        outer = {s: tx_packets(pair, s) for s in "ab"}
        run = run_tool(["nettxlat"] + args, lambda: self.udp(pair, sent))
        outer = {s: tx_packets(pair, s) - outer[s] for s in "ab"}
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing net device xmit queue latency. Hit Ctrl-C to end.")
        h = text_hists(run.lines)
        self.assertGreaterEqual(sent["a"], N_OUT)
        self.assertGreaterEqual(sent["b"], N_IN)
        for s in "ab":
            got = h[("usecs", "dev = " + pair.dev[s])]
            # Between the device's count around the traffic and around the run.
            self.assertTrue(sent[s] <= total(got) <= outer[s], (s, sent, outer, run))
            # A veth's transmit is a function call: far below a second.
            self.assertEqual(total(got, 1000000), 0, run)

    def test_driver_time(self):
        self.check_counts([], "ntx")

    def test_from_queue(self):
        self.check_counts(["-Q"], "ntxq")

    def test_completion(self):
        pair = self.pair("ntxc")
        run = run_tool(["nettxlat", "-c"], lambda: pair.run("a", ["ping", "-q", "-c", str(PINGS), "-i", "0.01",
                                                                  pair.addr4["b"]], check=True,
                                                            stdout=subprocess.DEVNULL))
        self.assertEqual(run.rc, 0, run)
        h = text_hists(run.lines)
        # The requests are consumed by b's ICMP, the replies freed at a.
        for s in "ab":
            self.assertGreaterEqual(total(h[("usecs", "dev = " + pair.dev[s])]), PINGS, run)

    def test_json(self):
        pair, sent = self.pair("ntxj"), {}
        run = run_tool(["-f", "json", "nettxlat"], lambda: self.udp(pair, sent))
        self.assertEqual(run.rc, 0, run)
        h = json_hists(run)
        mine = [k for k in h if k[0] == "@usecs" and pair.dev["a"] in k[1]]
        self.assertEqual(len(mine), 1, run)
        self.assertGreaterEqual(total(h[mine[0]]), sent["a"], run)


if __name__ == "__main__":
    unittest.main()
