"""The per-event socket tools (solisten, bindsnoop, soconnect, soaccept,
udpconnect) on one known sequence of socket calls made by a process of its
own command name on the loopback of a network namespace: every line's
columns are checked against what the process did."""
import json
import os
import unittest

from socktraffic import Actor
from toolrun import NetnsPair, mount_tracefs, run_tool

# Listeners on 127.0.0.1:7201 (SO_REUSEADDR, backlog 7) and [::1]:port 0
# (backlog 300000, capped at somaxconn); a TCP connect to each, accepted; a
# refused connect to 7202; UDP connects to 127.0.0.1:7203 and [::1]:7204;
# binds with IP_FREEBIND + IP_BIND_ADDRESS_NO_PORT (10.9.9.9:7205, not a local
# address), SO_REUSEPORT ([::1]:7206, UDP), SO_BINDTODEVICE lo (UDP, port 0),
# and a bind that fails (EADDRINUSE on [::1]:7206). Prints what the kernel chose.
EVENTS = r"""
S = socket
l4 = S.socket(); l4.setsockopt(S.SOL_SOCKET, S.SO_REUSEADDR, 1)
l4.bind(("127.0.0.1", 7201)); l4.listen(7)
l6 = S.socket(S.AF_INET6); l6.bind(("::1", 0)); l6.listen(300000)
p6 = l6.getsockname()[1]
c4 = S.socket(); c4.connect(("127.0.0.1", 7201)); a4, _ = l4.accept()
c6 = S.socket(S.AF_INET6); c6.connect(("::1", p6)); a6, _ = l6.accept()
r = S.socket()
try:
    r.connect(("127.0.0.1", 7202)); raise SystemExit("connected")
except ConnectionRefusedError:
    pass
u4 = S.socket(S.AF_INET, S.SOCK_DGRAM); u4.connect(("127.0.0.1", 7203))
u6 = S.socket(S.AF_INET6, S.SOCK_DGRAM); u6.connect(("::1", 7204))
b = S.socket(); b.setsockopt(S.SOL_IP, 15, 1); b.setsockopt(S.SOL_IP, 24, 1)  # IP_FREEBIND, IP_BIND_ADDRESS_NO_PORT
b.bind(("10.9.9.9", 7205))
ur = S.socket(S.AF_INET6, S.SOCK_DGRAM); ur.setsockopt(S.SOL_SOCKET, S.SO_REUSEPORT, 1); ur.bind(("::1", 7206))
d = S.socket(S.AF_INET, S.SOCK_DGRAM); d.setsockopt(S.SOL_SOCKET, S.SO_BINDTODEVICE, b"lo"); d.bind(("127.0.0.1", 0))
try:
    S.socket(S.AF_INET6, S.SOCK_DGRAM).bind(("::1", 7206)); raise SystemExit("bound")
except OSError as e:
    assert e.errno == errno.EADDRINUSE
print(json.dumps({"p6": p6, "c4": c4.getsockname()[1], "c6": c6.getsockname()[1], "dport": d.getsockname()[1],
                  "lo": S.if_nametoindex("lo"), "somaxconn": int(open("/proc/sys/net/core/somaxconn").read())}))
"""


class SockSnoopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def run_on_events(self, tool, *args):
        """Runs `tool -p PID ARGS` around EVENTS; returns (run, comm, pid, facts)."""
        with NetnsPair("sosn") as pair:
            actor = Actor(pair, "a", "bssn%d" % (os.getpid() % 100000), EVENTS)
            out = []
            try:
                run = run_tool([tool, "-p", str(actor.pid)] + list(args), lambda: out.extend(actor.go()))
            finally:
                actor.kill()
        self.assertEqual(run.rc, 0, run)
        return run, actor.comm, actor.pid, json.loads(out[-1])

    def rows(self, run):
        return [l.split() for l in run.lines[1:] if l.strip()]

    def test_solisten(self):
        run, comm, pid, f = self.run_on_events("solisten")
        self.assertEqual(run.lines[0].split(), ["PID", "COMM", "RET", "BACKLOG", "PROTO", "PORT", "ADDR"])
        self.assertEqual(self.rows(run), [
            [str(pid), comm, "0", "7", "TCPv4", "7201", "127.0.0.1"],
            [str(pid), comm, "0", str(min(300000, f["somaxconn"])), "TCPv6", str(f["p6"]), "::1"]], run)

    def test_solisten_json_and_time(self):
        run, comm, pid, f = self.run_on_events("solisten", "-t", "-f", "json")
        events = [e["data"] for e in run.json("event")]
        self.assertEqual(len(events), 2, run)
        for e in events:
            self.assertEqual(list(e), ["time", "pid", "comm", "ret", "backlog", "proto", "port", "addr"])
            self.assertRegex(e["time"], r"^\d\d:\d\d:\d\d$")
        self.assertEqual([(e["pid"], e["comm"], e["backlog"], e["proto"], e["port"], e["addr"]) for e in events],
                         [(pid, comm, 7, "TCPv4", 7201, "127.0.0.1"), (pid, comm, min(300000, f["somaxconn"]), "TCPv6", f["p6"], "::1")])

    def bind_rows(self, pid, comm, f, failed):
        rows = [
            [str(pid), comm, "0", "TCP", "...R.", "0", "7201", "127.0.0.1"],
            [str(pid), comm, "0", "TCP", ".....", "0", str(f["p6"]), "::1"],
            [str(pid), comm, "0", "TCP", "F.N..", "0", "7205", "10.9.9.9"],
            [str(pid), comm, "0", "UDP", "....r", "0", "7206", "::1"],
            [str(pid), comm, "0", "UDP", ".....", str(f["lo"]), str(f["dport"]), "127.0.0.1"],
        ]
        if failed:
            rows.append([str(pid), comm, "-98", "UDP", ".....", "0", "7206", "::1"])
        return rows

    def test_bindsnoop(self):
        run, comm, pid, f = self.run_on_events("bindsnoop")
        self.assertEqual(run.lines[0].split(), ["PID", "COMM", "RET", "PROTO", "OPTS", "IF", "PORT", "ADDR"])
        self.assertEqual(self.rows(run), self.bind_rows(pid, comm, f, False), run)

    def test_bindsnoop_failed_ports_time(self):
        run, comm, pid, f = self.run_on_events("bindsnoop", "-x", "-t", "-P", "7205,7206")
        self.assertEqual(run.lines[0].split()[:2], ["TIME(s)", "PID"])
        rows = self.rows(run)
        for r in rows:
            self.assertRegex(r[0], r"^\d\d:\d\d:\d\d$")
        want = [r for r in self.bind_rows(pid, comm, f, True) if r[6] in ("7205", "7206")]
        self.assertEqual([r[1:] for r in rows], want, run)

    def test_bindsnoop_cgroup(self):
        # The actor alone in a cgroup v2 directory of its own; no -p.
        root = next(l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2")
        cg = os.path.join(root, "bpfscope_test_%d" % os.getpid())
        os.mkdir(cg)
        try:
            with NetnsPair("socg") as pair:
                actor = Actor(pair, "a", "bscg%d" % (os.getpid() % 100000), EVENTS)
                out = []
                try:
                    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                        f.write(str(actor.pid))
                    run = run_tool(["bindsnoop", "-c", cg], lambda: out.extend(actor.go()))
                finally:
                    actor.kill()
        finally:
            os.rmdir(cg)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(self.rows(run), self.bind_rows(actor.pid, actor.comm, json.loads(out[-1]), False), run)

    def test_bindsnoop_json(self):
        run, comm, pid, f = self.run_on_events("bindsnoop", "-f", "json")
        events = [e["data"] for e in run.json("event")]
        self.assertEqual(len(events), 5, run)
        self.assertEqual(list(events[0]), ["pid", "comm", "ret", "proto", "freebind", "transparent",
                                           "bind_address_no_port", "reuseaddr", "reuseport", "ifindex", "port", "addr"])
        self.assertEqual([("".join(e[k] for k in ("freebind", "transparent", "bind_address_no_port", "reuseaddr",
                                                   "reuseport")), e["ifindex"], e["port"], e["addr"]) for e in events],
                         [(r[4], int(r[5]), int(r[6]), r[7]) for r in self.bind_rows(pid, comm, f, False)])

    def connect_rows(self, pid, comm, f):
        return [[str(pid), comm, "2", "127.0.0.1", "7201", "Success"],
                [str(pid), comm, "10", "::1", str(f["p6"]), "Success"],
                [str(pid), comm, "2", "127.0.0.1", "7202", "Connect", "refused"],
                [str(pid), comm, "2", "127.0.0.1", "7203", "Success"],
                [str(pid), comm, "10", "::1", "7204", "Success"]]

    def test_soconnect(self):
        run, comm, pid, f = self.run_on_events("soconnect")
        self.assertEqual(run.lines[0].split(), ["PID", "PROCESS", "FAM", "ADDRESS", "PORT", "LAT(us)", "RESULT"])
        rows = self.rows(run)
        self.assertEqual([r[:5] + r[6:] for r in rows], self.connect_rows(pid, comm, f), run)
        for r in rows:
            self.assertLess(int(r[5]), 1000000, run)

    def test_soconnect_json(self):
        run, comm, pid, f = self.run_on_events("soconnect", "-f", "json")
        events = [e["data"] for e in run.json("event")]
        self.assertEqual([list(e) for e in events], [["pid", "process", "fam", "address", "port", "lat_us", "result"]] * 5)
        self.assertEqual([[str(e["pid"]), e["process"], str(e["fam"]), e["address"], str(e["port"])] + e["result"].split()
                          for e in events], self.connect_rows(pid, comm, f), run)

    def test_soaccept(self):
        run, comm, pid, f = self.run_on_events("soaccept")
        self.assertEqual(run.lines[0].split(), ["PID", "PROCESS", "FAM", "ADDRESS", "PORT", "RESULT"])
        self.assertEqual(self.rows(run), [[str(pid), comm, "2", "127.0.0.1", str(f["c4"]), "Success"],
                                          [str(pid), comm, "10", "::1", str(f["c6"]), "Success"]], run)
        run, comm, pid, f = self.run_on_events("soaccept", "-f", "json")
        self.assertEqual([e["data"] for e in run.json("event")], [
            {"pid": pid, "process": comm, "fam": 2, "address": "127.0.0.1", "port": f["c4"], "result": "Success"},
            {"pid": pid, "process": comm, "fam": 10, "address": "::1", "port": f["c6"], "result": "Success"}], run)

    def test_udpconnect(self):
        run, comm, pid, f = self.run_on_events("udpconnect")
        self.assertEqual(run.lines[0].split(), ["TIME", "PID", "COMM", "IP", "RADDR", "RPORT"])
        rows = self.rows(run)
        self.assertEqual([r[1:] for r in rows], [[str(pid), comm, "4", "127.0.0.1", "7203"],
                                                 [str(pid), comm, "6", "::1", "7204"]], run)
        run, comm, pid, f = self.run_on_events("udpconnect", "-f", "json")
        events = [e["data"] for e in run.json("event")]
        self.assertEqual([(e["pid"], e["comm"], e["ip"], e["raddr"], e["rport"]) for e in events],
                         [(pid, comm, 4, "127.0.0.1", 7203), (pid, comm, 6, "::1", 7204)], run)


if __name__ == "__main__":
    unittest.main()
