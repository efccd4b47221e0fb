"""tcpstates on real TCP sessions between two network namespaces, and against
libbpf-tools' tcpstates on the same sessions."""
import os
import unittest

from toolrun import NetnsPair, mount_tracefs, run_tool, start_twin, tcp_session

HEADER = ("SKADDR           PID     COMM       LADDR           LPORT RADDR           RPORT "
          "OLDSTATE    -> NEWSTATE    MS")


def transitions(run, port, pair):
    """(laddr, lport, raddr, rport, old, new) of the pair's lines about `port`."""
    out = []
    for line in pair.mine(run.lines[1:]):
        c = line.split()
        if port in (c[4], c[6]):
            out.append(tuple(c[3:7] + [c[7], c[9]]))
    return out


class TcpstatesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_client_and_server_states(self):
        with NetnsPair("st4") as pair:
            def traffic():
                self.cpid, self.cport, _ = tcp_session(pair, "a", pair.addr4["a"], 5101, 1000, 10)
            run = run_tool(["tcpstates"], traffic)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], HEADER)
        a, b, cp = pair.addr4["a"], pair.addr4["b"], str(self.cport)
        got = transitions(run, "5101", pair)
        # The client's connect, as the twin prints it (the port is not yet
        # bound at SYN_SENT), then its established state.
        self.assertIn((b, "0", a, "5101", "CLOSE", "SYN_SENT"), got, run)
        self.assertIn((b, cp, a, "5101", "SYN_SENT", "ESTABLISHED"), got, run)
        self.assertIn((a, "5101", b, cp, "LISTEN", "SYN_RECV"), got, run)
        self.assertIn((a, "5101", b, cp, "SYN_RECV", "ESTABLISHED"), got, run)
        self.assertIn((a, "5101", b, cp, "LAST_ACK", "CLOSE"), got, run)
        for line in run.lines[1:]:
            c = line.split()
            self.assertRegex(c[0], r"^[0-9a-f]{16}$")
            self.assertRegex(c[-1], r"^\d+\.\d{3}$")

    def test_wide_timestamp_ipv6_and_filters(self):
        with NetnsPair("st6") as pair:
            def traffic():
                tcp_session(pair, "a", pair.addr6["a"], 5102, 100)
                tcp_session(pair, "a", pair.addr4["a"], 5103, 100)
            run = run_tool(["tcpstates", "-w", "-T", "-6", "-L", "5102"], traffic)
        self.assertEqual(run.rc, 0, run)
        self.assertTrue(run.lines[0].startswith("TIME(s)  SKADDR           PID     COMM             IP LADDR"), run)
        self.assertGreater(len(run.lines), 3, run)
        for line in pair.mine(run.lines[1:]):
            c = line.split()
            self.assertRegex(c[0], r"^\d\d:\d\d:\d\d$")
            self.assertEqual(c[4], "6")
            self.assertEqual(c[5], pair.addr6["a"])
            self.assertEqual(c[6], "5102")

    def test_json(self):
        with NetnsPair("stj") as pair:
            run = run_tool(["tcpstates", "-f", "json", "-D", "5104"],
                           lambda: tcp_session(pair, "a", pair.addr4["a"], 5104, 10))
        events = [m["data"] for m in run.json("event")]
        self.assertTrue(events, run)
        self.assertEqual(events[0]["oldstate"], "CLOSE")
        self.assertEqual(events[0]["newstate"], "SYN_SENT")
        for e in events:
            self.assertEqual(e["rport"], 5104)
            self.assertGreater(int(e["skaddr"]), 0)  # a quoted decimal where a double cannot hold it
            self.assertIsInstance(e["ms"], float)

    def test_same_lines_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/tcpstates"):
            self.skipTest("libbpf-tools not installed")
        with NetnsPair("stt") as pair:
            twin = start_twin(["/usr/sbin/tcpstates", "-L", "5105"], "SKADDR")
            try:
                run = run_tool(["tcpstates", "-L", "5105"],
                               lambda: tcp_session(pair, "a", pair.addr4["a"], 5105, 1000, 100), settle=0.5)
            finally:
                twin.stop()
            theirs = twin.finish()
        # Everything but the time in the old state.
        ours = [l.split()[:-1] for l in pair.mine(run.lines[1:])]
        twins = [l.split()[:-1] for l in pair.mine(theirs.lines[1:])]
        self.assertGreaterEqual(len(ours), 5, run)
        self.assertEqual(ours, twins, (run, theirs))


if __name__ == "__main__":
    unittest.main()
