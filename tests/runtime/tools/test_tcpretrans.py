"""tcpretrans under induced loss: nftables drops 5% of the segments a
namespace receives, and the tool's count of retransmits equals the kernel's
TcpRetransSegs in the sender's namespace."""
import re
import unittest

from toolrun import LossyPair, mount_tracefs, run_tool, tcp_session

SEND = 3000000


def nstat(pair, name):
    """The counter summed over both namespaces (the receiver retransmits too,
    its FIN when the ACK of it is dropped)."""
    total = 0
    for side in ("a", "b"):
        out = pair.run(side, ["nstat", "-saz", name], capture_output=True, text=True, check=True).stdout
        m = re.search(r"^%s\s+(\d+)" % name, out, re.M)
        total += int(m.group(1)) if m else 0
    return total


class TcpretransTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_events_match_nstat(self):
        # Only data segments are dropped (not the handshake).
        # The kernel's count is read while the tool still traces, once no
        # socket of the session can send again: both see the same window.
        # TcpRetransSegs counts every retransmit the kernel tried;
        # TCPRetransFail those whose transmit failed (a full queue on a busy
        # machine: the tracepoint's err is not 0), which were not sent.
        def sent():
            return nstat(pair, "TcpRetransSegs") - nstat(pair, "TcpExtTCPRetransFail")

        with LossyPair("rtx", 5301, match="meta length > 200") as pair:
            before = sent()
            after = []

            def traffic():
                tcp_session(pair, "a", pair.addr4["a"], 5301, SEND)
                pair.wait_settled(5301)
                after.append(sent())
            run = run_tool(["tcpretrans"], traffic, settle=0.3)
            segs = after[0] - before
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0].split(), ["TIME", "PID", "IP", "LADDR:LPORT", "T>", "RADDR:RPORT", "STATE"])
        events = pair.mine(run.lines[1:])
        self.assertGreater(segs, 0)
        # Every retransmit is an event, or a firing the run reports as missed.
        self.assertEqual(len(events) + run.missed(), segs, run)
        for line in events:
            c = line.split()
            self.assertRegex(c[0], r"^\d\d:\d\d:\d\d$")
            self.assertEqual(c[2], "4")
            self.assertEqual(c[4], "R>")
            ends = sorted([c[3], c[5]])
            self.assertIn("%s:5301" % pair.addr4["a"], ends, line)

    def test_count_mode_ipv6_and_json(self):
        with LossyPair("rtxc", 5302, match="meta length > 200") as pair:
            before = nstat(pair, "TcpRetransSegs")
            run = run_tool(["tcpretrans", "-c", "-6"],
                           lambda: (tcp_session(pair, "a", pair.addr6["a"], 5302, SEND),
                                    tcp_session(pair, "a", pair.addr4["a"], 5302, SEND // 3)), settle=1.5)
            json_run = run_tool(["tcpretrans", "-f", "json"],
                                lambda: tcp_session(pair, "a", pair.addr6["a"], 5302, SEND // 3), settle=1.5)
            total = nstat(pair, "TcpRetransSegs") - before
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing retransmits ... Hit Ctrl-C to end", run)
        rows = [l.split() for l in pair.mine(run.lines) if "<->" in l]
        self.assertIn(len(rows), (1, 2), run)
        self.assertIn("%s:5302" % pair.addr6["a"], (rows[0][0], rows[0][2]), run)
        events = [m["data"] for m in json_run.json("event") if m["data"]["raddr"] in pair.addr6.values()]
        # The IPv4 session's retransmits are not in the -6 count; all are in nstat.
        counted = sum(int(r[3]) for r in rows)
        self.assertGreater(counted, 0)
        self.assertLessEqual(counted + len(events), total)
        for e in events:
            self.assertIn(5302, (e["lport"], e["rport"]))
            self.assertEqual(e["ip"], 6)
            self.assertIn(e["state"], ("ESTABLISHED", "FIN_WAIT1", "CLOSING", "LAST_ACK", "SYN_SENT"))


if __name__ == "__main__":
    unittest.main()
