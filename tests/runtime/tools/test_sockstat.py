"""The socket summary tools (sockstat, sofamily, soprotocol, socketio,
socksize, sormem, soconnlat, so1stbyte) on one known mix of socket calls made
by a process of its own command name on the loopback of a network namespace:
TCP over IPv4 and IPv6, UDP,
and a failed AF_UNIX connect; the counts are those calls."""
import os
import unittest

from socktraffic import Actor, maps
from toolrun import NetnsPair, mount_tracefs, run_tool, start_tool

N = 5
# Two TCP sessions (IPv4 127.0.0.1:7001, IPv6 [::1]:7002): the client sends N
# messages of 1000 bytes, each received whole (MSG_WAITALL), the server replies
# 3000 bytes in one send, received in one recv. Then a connected UDP socket
# sends 3 datagrams of 200 bytes to a bound one (7003), and an AF_UNIX connect
# fails. Prints the clients' ports.
TRAFFIC = r"""
N = int(ARGS[0])
ports = []
for fam, host, port in ((socket.AF_INET, "127.0.0.1", 7001), (socket.AF_INET6, "::1", 7002)):
    l = socket.socket(fam, socket.SOCK_STREAM)
    l.bind((host, port)); l.listen(4)
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.connect((host, port))
    a, _ = l.accept()
    for _ in range(N):
        c.sendall(b"x" * 1000)
        assert len(a.recv(1000, socket.MSG_WAITALL)) == 1000
    a.sendall(b"y" * 3000)
    assert len(c.recv(3000, socket.MSG_WAITALL)) == 3000
    ports.append(c.getsockname()[1])
    c.close(); a.close(); l.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 7003))
uc = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
uc.connect(("127.0.0.1", 7003))
for _ in range(3):
    uc.send(b"z" * 200)
    assert len(u.recv(1000)) == 200
x = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    x.connect("/nonexistent-bpfscope-socket")
except OSError:
    pass
print(json.dumps(ports))
"""


class SockToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def run_on_traffic(self, args, pid_option=False):
        """Runs tool `args` (with -p of the traffic's pid when asked) around
        TRAFFIC; returns (run, actor, client ports)."""
        with NetnsPair("sost") as pair:
            actor = Actor(pair, "a", "bsst%d" % (os.getpid() % 100000), TRAFFIC, N)
            out = []
            try:
                argv = args[:1] + (["-p", str(actor.pid)] if pid_option else []) + args[1:]
                run = run_tool(argv, lambda: out.extend(actor.go()))
            finally:
                actor.kill()
        self.assertEqual(run.rc, 0, run)
        import json
        return run, actor, json.loads(out[-1])

    def test_sockstat(self):
        run, actor, _ = self.run_on_traffic(["sockstat", "-f", "json", "1"], pid_option=True)
        total = {}
        for m in run.json("map"):
            for probe, n in m["data"]["@"].items():
                total[probe] = total.get(probe, 0) + n
        t = "tracepoint:syscalls:sys_enter_"
        self.assertEqual(total, {
            t + "socket": 7, t + "bind": 3, t + "connect": 4, t + "accept4": 2,
            "tracepoint:sock:sock_send_length": 2 * N + 2 + 3,
            "tracepoint:sock:sock_recv_length": 2 * N + 2 + 3}, run)

    def test_sockstat_interval_count(self):
        p = start_tool(["sockstat", "1", "2"])
        p.proc.wait(timeout=10)
        run = p.finish()
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing sock statistics. Output every 1 second(s).")
        times = [l for l in run.lines if len(l) == 8 and l[2] == ":" and l[5] == ":"]
        self.assertEqual(len(times), 2, run)

    def test_sofamily(self):
        run, actor, _ = self.run_on_traffic(["sofamily", "-f", "json"], pid_option=True)
        c = actor.comm
        m = maps(run)
        self.assertEqual(m["@connect"], {c + ",2,AF_INET": 2, c + ",10,AF_INET6": 1, c + ",1,AF_UNIX": 1}, run)
        self.assertEqual(m["@accept"], {c + ",2,AF_INET": 1, c + ",10,AF_INET6": 1}, run)

    def test_soprotocol(self):
        run, actor, _ = self.run_on_traffic(["soprotocol"], pid_option=True)
        c = actor.comm
        self.assertEqual(sorted(l for l in run.lines if l.startswith("@")), sorted([
            "@accept[%s, 6, IPPROTO_TCP, TCP]: 1" % c,
            "@accept[%s, 6, IPPROTO_TCP, TCPv6]: 1" % c,
            "@connect[%s, 0, IPPROTO_IP, UNIX-STREAM]: 1" % c,
            "@connect[%s, 17, IPPROTO_UDP, UDP]: 1" % c,
            "@connect[%s, 6, IPPROTO_TCP, TCP]: 1" % c,
            "@connect[%s, 6, IPPROTO_TCP, TCPv6]: 1" % c]), run)

    def test_socketio(self):
        run, actor, (p4, p6) = self.run_on_traffic(["socketio", "-f", "json"])
        m = maps(run)
        k = "%s,%d," % (actor.comm, actor.pid)
        mine = lambda name: {key[len(k):]: v for key, v in m[name].items() if key.startswith(k)}
        self.assertEqual(mine("@io"), {
            "write,TCP,7001": N, "read,TCP,7001": 1, "read,TCP,%d" % p4: N, "write,TCP,%d" % p4: 1,
            "write,TCPv6,7002": N, "read,TCPv6,7002": 1, "read,TCPv6,%d" % p6: N, "write,TCPv6,%d" % p6: 1,
            "write,UDP,7003": 3, "read,UDP,0": 3}, run)
        self.assertEqual(mine("@bytes"), {
            "write,TCP,7001": 1000 * N, "read,TCP,7001": 3000, "read,TCP,%d" % p4: 1000 * N,
            "write,TCP,%d" % p4: 3000, "write,TCPv6,7002": 1000 * N, "read,TCPv6,7002": 3000,
            "read,TCPv6,%d" % p6: 1000 * N, "write,TCPv6,%d" % p6: 3000, "write,UDP,7003": 600,
            "read,UDP,0": 600}, run)

    def test_socksize(self):
        run, actor, _ = self.run_on_traffic(["socksize", "-f", "json"])
        m = maps(run)
        want = {(128, 255): 3, (512, 1023): 2 * N, (2048, 4095): 2}
        for name in ("@read_bytes", "@write_bytes"):
            got = {(b["min"], b["max"]): b["count"] for b in m[name]["{.comm=%s}" % actor.comm] if b["count"]}
            self.assertEqual(got, want, (name, run))

    def test_sormem_histograms(self):
        run, actor, _ = self.run_on_traffic(["sormem", "-f", "json"])
        m = maps(run)
        for name in ("@rmem_alloc", "@rmem_limit"):
            self.assertGreaterEqual(sum(b["count"] for b in m[name]), 2 * N + 5, (name, run))
        # The server's reads found a 1000-byte message queued (its skb's truesize is more).
        self.assertTrue([b for b in m["@rmem_alloc"] if b.get("min", 0) >= 1024 and b["count"]], run)
        # Receive buffers here are between 4 KB and 64 MB.
        for b in m["@rmem_limit"]:
            if b["count"]:
                self.assertGreaterEqual(b["min"], 2048, run)
                self.assertLessEqual(b["max"], 64 << 20, run)

    def test_sormem_rcvqueue_full(self):
        # A ping socket (ICMP datagrams) with the smallest receive buffer,
        # never read while 40 echo replies of 1000 bytes arrive: those that do
        # not fit are dropped at sock_queue_rcv_skb (sock:sock_rcvqueue_full).
        # Prints the buffer size and how many were dropped.
        code = r"""
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1)
for seq in range(40):
    r.sendto(bytes([8, 0, 0, 0, 0, 0, 0, seq]) + b"q" * 1000, ("127.0.0.1", 0))
time.sleep(0.1)
r.setblocking(False)
queued = 0
while True:
    try:
        r.recv(2000); queued += 1
    except BlockingIOError:
        break
print(r.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF), 40 - queued)
"""
        with NetnsPair("sorm") as pair:
            pair.run("a", ["sysctl", "-qw", "net.ipv4.ping_group_range=0 0"], check=True)
            actor = Actor(pair, "a", "bsrm%d" % (os.getpid() % 100000), code)
            out = []
            try:
                run = run_tool(["sormem", "-f", "json"], lambda: out.extend(actor.go()))
            finally:
                actor.kill()
        self.assertEqual(run.rc, 0, run)
        rcvbuf, dropped = map(int, out[-1].split())
        self.assertGreater(dropped, 30, out)
        events = [e["data"] for e in run.json("event") if e["data"]["probe"] == "tracepoint:sock:sock_rcvqueue_full"
                  and e["data"]["rcvbuf"] == rcvbuf]
        self.assertEqual(len(events), dropped, run)
        for e in events:
            self.assertEqual(sorted(e), ["probe", "rcvbuf", "rmem_alloc", "truesize"])
            self.assertGreaterEqual(e["rmem_alloc"], rcvbuf)
            self.assertGreater(e["truesize"], 1000)

    def test_soconnlat(self):
        run, actor, _ = self.run_on_traffic(["soconnlat", "-f", "json"], pid_option=True)
        hists = maps(run)["@usecs"]
        # Keys are (comm, user stack); three IP connects (TCP v4, v6, UDP) took under 1 s each.
        mine = [buckets for key, buckets in hists.items() if key.startswith("{.comm=%s," % actor.comm)]
        self.assertEqual(sum(b["count"] for h in mine for b in h), 3, run)
        for h in mine:
            for b in h:
                if b["count"]:
                    self.assertLess(b.get("max", 0), 1000000, run)

    def test_soconnlat_nonblocking(self):
        # A listener with backlog 0 holds one connection in its accept queue;
        # a non-blocking connect behind it gets EINPROGRESS (its SYN is
        # dropped while the queue is full) and completes when its SYN is
        # retransmitted, about 1 s later, after the first one was accepted:
        # soconnlat ends its latency at the poll() that returns ready.
        code = r"""
l = socket.socket(); l.bind(("127.0.0.1", 7010)); l.listen(0)
c1 = socket.socket(); c1.connect(("127.0.0.1", 7010))
c2 = socket.socket(); c2.setblocking(False)
assert c2.connect_ex(("127.0.0.1", 7010)) == errno.EINPROGRESS
a, _ = l.accept()
p = select.poll(); p.register(c2, select.POLLOUT)
t = time.time()
assert p.poll(5000)
assert c2.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
print(time.time() - t)
"""
        with NetnsPair("socl") as pair:
            actor = Actor(pair, "a", "bscl%d" % (os.getpid() % 100000), code)
            out = []
            try:
                run = run_tool(["soconnlat", "-p", str(actor.pid), "-f", "json"], lambda: out.extend(actor.go()))
            finally:
                actor.kill()
        self.assertEqual(run.rc, 0, run)
        waited = float(out[-1])
        self.assertGreater(waited, 0.5, out)
        h = [b for key, bs in maps(run)["@usecs"].items() for b in bs if b["count"]]
        self.assertEqual(sum(b["count"] for b in h), 2, run)
        # The blocking connect took under 0.5 s; the non-blocking one as long as the poll waited.
        self.assertLess(h[0]["max"], 500000, run)
        self.assertLessEqual(h[-1]["min"], waited * 1e6, run)
        self.assertGreaterEqual(h[-1]["max"], waited * 1e6, run)

    def test_so1stbyte(self):
        run, actor, _ = self.run_on_traffic(["so1stbyte"], pid_option=True)
        # libbpf-tools' layout: the key's line, then the usecs table.
        label = "comm = %s, pid = %d" % (actor.comm, actor.pid)
        self.assertIn(label, run.lines, run)
        table = run.lines[run.lines.index(label) + 1:]
        self.assertEqual(table[0].split(), ["usecs", ":", "count", "distribution"], run)
        counts = [int(l.split()[4]) for l in table[1:] if "->" in l]
        self.assertEqual(sum(counts), 2, run)  # the two TCP clients' first reads; the UDP client never reads

    def test_so1stbyte_json(self):
        run, actor, _ = self.run_on_traffic(["so1stbyte", "-f", "json"], pid_option=True)
        h = maps(run)["@usecs"]["{.comm=%s,.pid=%d}" % (actor.comm, actor.pid)]
        self.assertEqual(sum(b["count"] for b in h), 2, run)
        for b in h:
            if b["count"]:
                self.assertLess(b["max"], 1000000, run)

if __name__ == "__main__":
    unittest.main()
