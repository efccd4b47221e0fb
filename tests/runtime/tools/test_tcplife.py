"""tcplife on real TCP sessions between two network namespaces: the columns
hold the pids, ports and addresses the test used and the bytes it sent."""
import os
import re
import subprocess
import unittest

from toolrun import BPFSCOPE, NetnsPair, mount_tracefs, run_tool, start_tool, start_twin, tcp_session

HEADER = "PID     COMM             LADDR           LPORT RADDR           RPORT TX_KB  RX_KB  MS"
SEND, REPLY = 300000, 10000


def rows(run, pair):
    """The event lines about the pair's sessions, as lists of columns."""
    return [l.split() for l in pair.mine(run.lines[1:])]


def kb(n):
    return "%.2f" % (n / 1024.0)


class TcplifeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def session(self, pair, six=False, port=5001):
        host = pair.addr6["a"] if six else pair.addr4["a"]
        self.cpid, self.cport, self.spid = tcp_session(pair, "a", host, port, SEND, REPLY)

    def test_ipv4_columns_and_bytes(self):
        with NetnsPair("life4") as pair:
            run = run_tool(["tcplife"], lambda: self.session(pair))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], HEADER)
        got = rows(run, pair)
        a, b = pair.addr4["a"], pair.addr4["b"]
        client = [str(self.cpid), "python3", b, str(self.cport), a, "5001", kb(SEND), kb(REPLY)]
        server = [str(self.spid), "python3", a, "5001", b, str(self.cport), kb(REPLY), kb(SEND)]
        self.assertEqual(sorted(r[:8] for r in got), sorted([client, server]), run)
        for r in got:
            self.assertRegex(r[8], r"^\d+\.\d\d$")
            self.assertLess(float(r[8]), 5000)

    def test_ipv6_wide_and_time(self):
        with NetnsPair("life6") as pair:
            run = run_tool(["tcplife", "-w", "-T"], lambda: self.session(pair, six=True))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0],
                         "TIME(s)  PID     COMM             LADDR                      LPORT RADDR"
                         "                      RPORT TX_KB  RX_KB  MS")
        a, b = pair.addr6["a"], pair.addr6["b"]
        self.assertEqual(len(pair.mine(run.lines)), 2, run)
        for line in pair.mine(run.lines[1:]):
            self.assertRegex(line, r"^\d\d:\d\d:\d\d \d+ +python3 +")
            # The address columns are 26 wide.
            laddr = line[34:34 + 26]
            self.assertIn(laddr.strip(), (a, b), line)
        self.assertEqual(sorted(r[3] for r in rows(run, pair)), sorted([a, b]))

    def test_family_and_port_filters(self):
        cases = [
            (["-4"], lambda r: True, lambda r: False),
            (["-6"], lambda r: False, lambda r: True),
            (["-L", "5001"], lambda r: r[3] == "5001", lambda r: r[3] == "5001"),
            (["-D", "5001,5002"], lambda r: r[5] == "5001", lambda r: r[5] == "5002"),
        ]
        for args, want4, want6 in cases:
            with self.subTest(args=args), NetnsPair("lifef") as pair:
                def traffic():
                    self.session(pair, six=False)
                    self.session(pair, six=True, port=5002)
                run = run_tool(["tcplife"] + args, traffic)
                self.assertEqual(run.rc, 0, run)
                got = rows(run, pair)
                self.assertTrue(got, run)
                for r in got:
                    self.assertTrue((want6 if ":" in r[2] else want4)(r), (args, r))
                self.assertEqual(len(got), 2 if args[0] in ("-4", "-6") else (2 if args[0] == "-D" else 1), run)

    def test_pid_filter(self):
        from toolrun import TcpServer
        with NetnsPair("lifep") as pair:
            srv = TcpServer(pair, "a", pair.addr4["a"], 5003, REPLY)
            run = run_tool(["tcplife", "-p", str(srv.pid)], lambda: srv.connect(SEND))
        self.assertEqual(run.rc, 0, run)
        got = rows(run, pair)
        self.assertEqual(len(got), 1, run)
        self.assertEqual(got[0][:4], [str(srv.pid), "python3", pair.addr4["a"], "5003"])

    def test_json_events(self):
        with NetnsPair("lifej") as pair:
            run = run_tool(["tcplife", "-f", "json"], lambda: self.session(pair))
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event") if m["data"]["laddr"] in pair.addr4.values()]
        self.assertEqual(len(events), 2, run)
        for e in events:
            self.assertEqual(sorted(e), sorted(["pid", "comm", "laddr", "lport", "raddr", "rport",
                                                "tx_kb", "rx_kb", "ms"]))
            self.assertIsInstance(e["pid"], int)
            self.assertIsInstance(e["lport"], int)
            self.assertIsInstance(e["tx_kb"], float)
        client = [e for e in events if e["rport"] == 5001][0]
        self.assertEqual(client["pid"], self.cpid)
        self.assertEqual(client["lport"], self.cport)
        self.assertAlmostEqual(client["tx_kb"], SEND / 1024.0, places=2)
        self.assertAlmostEqual(client["rx_kb"], REPLY / 1024.0, places=2)

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/tcplife"):
            self.skipTest("libbpf-tools not installed")
        with NetnsPair("lifet") as pair:
            twin = start_twin(["/usr/sbin/tcplife"], "PID")
            try:
                run = run_tool(["tcplife"], lambda: (self.session(pair), self.session(pair, six=True, port=5004)),
                               settle=0.5)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours = sorted(r[:8] for r in rows(run, pair))
        twin_rows = sorted(l.split()[:8] for l in pair.mine(theirs.lines[1:]))
        self.assertEqual(len(ours), 4, run)
        self.assertEqual(ours, twin_rows, (run, theirs))


class ToolCliTest(unittest.TestCase):
    def cli(self, *args):
        return subprocess.run([BPFSCOPE] + list(args), capture_output=True, text=True, timeout=30)

    def test_help(self):
        r = self.cli("tcplife", "-h")
        self.assertEqual(r.returncode, 0)
        self.assertIn("USAGE: tcplife [-h] [-p PID] [-4] [-6]", r.stdout)
        self.assertIn("-L, --localport=LOCALPORT", r.stdout)

    def test_bad_options_exit_2(self):
        for args in (["-x"], ["-L", "0"], ["-L", "80,http"], ["-p", "abc"], ["--nope"], ["extra"]):
            with self.subTest(args=args):
                r = self.cli("tcplife", *args)
                self.assertEqual(r.returncode, 2, r)
                self.assertRegex(r.stderr, r"^tcplife: ")
                self.assertIn("USAGE: tcplife", r.stderr)

    def test_source_and_file(self):
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "../../../tools/tcplife.bt")
        r = self.cli("tcplife", "--source")
        self.assertEqual(r.returncode, 0)
        with open(path) as f:
            self.assertEqual(r.stdout, f.read())
        # A tool file run by path takes the same options.
        r = self.cli("--dry-run", path, "-4", "-L", "22")
        self.assertEqual(r.returncode, 0, r)

    def test_tools_listing(self):
        r = self.cli("tools")
        self.assertEqual(r.returncode, 0)
        line = [l for l in r.stdout.splitlines() if l.startswith("tcplife ")]
        self.assertEqual(len(line), 1, r.stdout)
        self.assertRegex(line[0], r"Trace the lifespan of TCP sessions.* ok$")


if __name__ == "__main__":
    unittest.main()
