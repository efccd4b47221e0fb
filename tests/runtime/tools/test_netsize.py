"""netsize on UDP datagrams of two sizes between two network namespaces,
traced on one veth (-d): the datagrams land in the buckets their sizes give,
on send (with the Ethernet header) and on receive (without it), and a TCP
stream's GSO packets show segments of the MSS (-g)."""
import subprocess
import unittest

from histrun import UdpSink, json_hists, text_hists, total, tx_packets, udp_send
from toolrun import NetnsPair, mount_tracefs, run_tool, tcp_session

N_OUT, OUT = 30, 1000  # a -> b: 1042-byte frames
N_IN, IN = 20, 200     # b -> a: 228 bytes once the Ethernet header is pulled


class NetsizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, pair):
        with UdpSink(pair, "b", pair.addr4["b"], 7001), UdpSink(pair, "a", pair.addr4["a"], 7002):
            udp_send(pair, "a", pair.addr4["b"], 7001, OUT, N_OUT)
            udp_send(pair, "b", pair.addr4["a"], 7002, IN, N_IN)

    def pair(self, tag):
        pair = NetnsPair(tag, unique=True).__enter__()
        self.addCleanup(pair.__exit__, None, None, None)
        # Neighbours resolved before tracing.
        pair.run("a", ["ping", "-c1", "-q", pair.addr4["b"]], check=True, stdout=subprocess.DEVNULL)
        return pair

    def test_sizes_on_one_device(self):
        pair = self.pair("nsz")
        tx = tx_packets(pair, "a")
        run = run_tool(["netsize", "-d", pair.dev["a"]], lambda: self.traffic(pair))
        tx = tx_packets(pair, "a") - tx
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing net device send/receive. Hit Ctrl-C to end.")
        h = text_hists(run.lines)
        self.assertEqual(sorted(h), [("nic_send_bytes", ""), ("recv_bytes", ""), ("send_bytes", "")], run)
        for name in ("send_bytes", "nic_send_bytes"):
            self.assertEqual(total(h[name, ""], 1024, 2048), N_OUT, run)
        self.assertEqual(total(h["recv_bytes", ""], 128, 256), N_IN, run)
        # Every packet the device sent while traced, and no more than it sent.
        self.assertTrue(N_OUT <= total(h["nic_send_bytes", ""]) <= tx, (tx, run))

    def test_gso_segments(self):
        pair = self.pair("nszg")
        run = run_tool(["netsize", "-g", "-d", pair.dev["a"]],
                       lambda: tcp_session(pair, "b", pair.addr4["b"], 7003, 2000000))
        self.assertEqual(run.rc, 0, run)
        h = text_hists(run.lines)
        segs, size = h["nic_send_gso_segs", ""], h["nic_send_gso_size", ""]
        # Each GSO packet has one size (the MSS, 1448 with timestamps) and
        # at least one segment; 2 MB takes many of them.
        self.assertEqual(total(segs), total(size), run)
        self.assertEqual(total(size, 1024, 2048), total(size), run)
        self.assertGreater(total(segs, 2), 0, run)

    def test_json(self):
        pair = self.pair("nszj")
        run = run_tool(["-f", "json", "netsize", "-d", pair.dev["a"]], lambda: self.traffic(pair))
        self.assertEqual(run.rc, 0, run)
        h = json_hists(run)
        self.assertEqual(total(h["@send_bytes", ""], 1024, 2048), N_OUT, run)
        self.assertEqual(total(h["@recv_bytes", ""], 128, 256), N_IN, run)


if __name__ == "__main__":
    unittest.main()
