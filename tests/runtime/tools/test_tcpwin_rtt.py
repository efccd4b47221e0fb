"""tcpwin and tcprtt on TCP transfers between two network namespaces: under
induced loss the sender's slow-start threshold drops from its initial
infinity; RTT samples are counted per segment and land in sub-10 ms buckets
on a veth pair; port filters select the connection."""
import json
import unittest

from toolrun import LossyPair, NetnsPair, mount_tracefs, run_tool, tcp_session

INFINITE_SSTHRESH = 2147483647


class TcpwinTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_ssthresh_drops_under_loss(self):
        with LossyPair("win", 5801, percent=5) as pair:
            run = run_tool(["tcpwin", "-P", "5801"], lambda: tcp_session(pair, "a", pair.addr4["a"], 5801, 2000000))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "event,sock,time_us,snd_cwnd,snd_ssthresh,sndbuf,sk_wmem_queued")
        rows = [l.split(",") for l in run.lines[1:]]
        self.assertGreater(len(rows), 10, run)
        self.assertEqual(len({r[1] for r in rows}), 1)  # the client's socket only
        times = [int(r[2]) for r in rows]
        self.assertEqual(times, sorted(times))
        self.assertTrue(all(int(r[3]) >= 1 for r in rows))
        self.assertEqual(int(rows[0][4]), INFINITE_SSTHRESH)
        self.assertTrue(any(int(r[4]) < INFINITE_SSTHRESH for r in rows), "no loss recovery seen")


class TcprttTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_histogram(self):
        with NetnsPair("rtt") as pair:
            run = run_tool(["tcprtt", "-p", "5811", "-e"],
                           lambda: (tcp_session(pair, "a", pair.addr4["a"], 5811, 1000, 300000),
                                    tcp_session(pair, "a", pair.addr4["a"], 5812, 1000, 300000)))
            other = run_tool(["tcprtt", "-p", "5813"], lambda: tcp_session(pair, "a", pair.addr4["a"], 5812, 10, 10))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing TCP RTT... Hit Ctrl-C to end.")
        table = run.lines[run.lines.index("     usecs               : count    distribution") + 1:]
        counts = {}
        for line in table:
            if "->" not in line:
                break
            low, _, high, _, count = line.split()[:5]
            counts[(int(low), int(high))] = int(count)
        self.assertGreater(sum(counts.values()), 0, run)
        self.assertTrue(all(low < 10000 for (low, high), n in counts.items() if n), run)
        # libbpf-tools' label line, with -e the average (whole microseconds).
        label = run.lines[run.lines.index("     usecs               : count    distribution") - 1]
        self.assertRegex(label, r"^All Addresses = \*{6} \[AVG \d+\]$")
        self.assertEqual(other.lines, ["Tracing TCP RTT... Hit Ctrl-C to end."], other)

    def test_histograms_by_address(self):
        # -p keeps the server's socket (A, port 5816): one histogram per
        # local address with -b, per remote address with -B, IPv4 and IPv6.
        with NetnsPair("rttb") as pair:
            def labels(args):
                run = run_tool(["tcprtt", "-p", "5816"] + args,
                               lambda: (tcp_session(pair, "a", pair.addr4["a"], 5816, 300000, 10),
                                        tcp_session(pair, "a", pair.addr6["a"], 5816, 300000, 10)))
                self.assertEqual(run.rc, 0, run)
                heads = [i for i, l in enumerate(run.lines) if l.strip().startswith("usecs")]
                return sorted(run.lines[i - 1] for i in heads)
            local = labels(["-b"])
            self.assertEqual(local, sorted(["Local Address = " + pair.addr4["a"], "Local Address = " + pair.addr6["a"]]))
            remote = labels(["-B", "-e"])
            self.assertEqual(len(remote), 2, remote)
            for line, addr in zip(remote, sorted([pair.addr4["b"], pair.addr6["b"]])):
                self.assertRegex(line, r"^Remote Address = %s \[AVG \d+\]$" % addr)

    def test_address_filters(self):
        # The server is A; the connections' segments are received at both ends.
        with NetnsPair("rtta") as pair:
            def count(args):
                run = run_tool(["tcprtt", "-f", "json", "-P", "5815"] + args,
                               lambda: tcp_session(pair, "a", pair.addr4["a"], 5815, 300000, 10))
                self.assertEqual(run.rc, 0, run)
                return sum(b["count"] for l in run.lines if '"hist"' in l
                           for h in json.loads(l)["data"]["@usecs"].values() for b in h)
            self.assertGreater(count(["-A", pair.addr4["a"]]), 0)
            self.assertGreater(count(["-a", pair.addr4["b"]]), 0)
            self.assertEqual(count(["-A", pair.addr4["b"]]), 0)
            self.assertEqual(count(["-a", "10.255.255.1"]), 0)

    def test_milliseconds_json_and_duration(self):
        with NetnsPair("rttj") as pair:
            run = run_tool(["tcprtt", "-f", "json", "-m", "-P", "5814", "-d", "1"],
                           lambda: tcp_session(pair, "a", pair.addr4["a"], 5814, 300000, 10), settle=1.5)
        self.assertEqual(run.rc, 0, run)
        hists = [json.loads(l) for l in run.lines if '"hist"' in l]
        self.assertEqual(len(hists), 1, run)
        buckets = hists[0]["data"]["@msecs"]["{.AllAddresses=******}"]
        self.assertGreater(sum(b["count"] for b in buckets), 0)
        self.assertLess(buckets[-1]["max"], 10, buckets)  # under 10 ms on a veth


if __name__ == "__main__":
    unittest.main()
