"""tcpaccept on connections accepted in a network namespace: the accepting
process, both ends and the ports the test used."""
import unittest

from toolrun import NetnsPair, TcpServer, mount_tracefs, run_tool


class TcpacceptTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_accepts(self):
        with NetnsPair("acc") as pair:
            got = []
            def traffic():
                for host, port in ((pair.addr4["a"], 5601), (pair.addr6["a"], 5602), (pair.addr4["a"], 5603)):
                    srv = TcpServer(pair, "a", host, port)
                    got.append((srv.pid, host, port) + srv.connect(10))
            run = run_tool(["tcpaccept", "-t", "-P", "5601,5602"], traffic)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0].split(), ["TIME(s)", "PID", "COMM", "IP", "RADDR", "RPORT", "LADDR", "LPORT"])
        rows = [l.split() for l in pair.mine(run.lines[1:])]
        want = []
        for (spid, host, port, cpid, cport), ip, peer in zip(got[:2], ("4", "6"), (pair.addr4["b"], pair.addr6["b"])):
            want.append([str(spid), "python3", ip, peer, str(cport), host, str(port)])
        self.assertEqual([r[1:] for r in rows], want, run)
        for r in rows:
            self.assertRegex(r[0], r"^\d+\.\d{3}$")

    def test_json_and_pid_filter(self):
        with NetnsPair("accj") as pair:
            srv = TcpServer(pair, "a", pair.addr4["a"], 5604)
            other = TcpServer(pair, "a", pair.addr4["a"], 5605)
            def traffic():
                srv.connect(10)
                other.connect(10)
            run = run_tool(["tcpaccept", "-f", "json", "-p", str(srv.pid)], traffic)
        events = [m["data"] for m in run.json("event") if m["data"]["laddr"] == pair.addr4["a"]]
        self.assertEqual(len(events), 1, run)
        self.assertEqual((events[0]["pid"], events[0]["lport"], events[0]["raddr"]), (srv.pid, 5604, pair.addr4["b"]))


if __name__ == "__main__":
    unittest.main()
