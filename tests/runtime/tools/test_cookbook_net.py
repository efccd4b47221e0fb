"""The cookbook's networking entries (docs/one-liners.md, topic net), each
command run as written (with -f json, for the numbers) around TCP and UDP
traffic between two network namespaces the test makes, and connects to a
closed port. The traffic comes from Python programs with command names of
their own that count their own calls (sends, receives, accepts), so that
entries keyed by process name are checked exactly; system-wide counts and
histograms hold at least the test's."""
import json
import subprocess
import threading
import time
import unittest

from cookbook import entries, hist_total, keyed, run_json
from socktraffic import Actor
from toolrun import LossyPair, NetnsPair, mount_tracefs, tcp_session

E = entries()
IPPROTO_TCP, IPPROTO_UDP = 6, 17
ECONNREFUSED = 111

CONNECT_CLOSED = r"""
n, port = int(ARGS[0]), int(ARGS[1])
for _ in range(n):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        sys.exit("connected")
    except ConnectionRefusedError:
        pass
    s.close()
"""

TCP_SERVER = r"""
host, port, k = ARGS[0], int(ARGS[1]), int(ARGS[2])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((host, port)); l.listen(8)
recvs = got = 0
for _ in range(k):
    c, _ = l.accept()
    while True:
        b = c.recv(65536); recvs += 1; got += len(b)
        if not b: break
    c.close()
print(json.dumps({"recvs": recvs, "bytes": got}))
"""

TCP_CLIENT = r"""
host, port, k, m, size = ARGS[0], int(ARGS[1]), int(ARGS[2]), int(ARGS[3]), int(ARGS[4])
sends = sent = 0
for _ in range(k):
    c = socket.socket()
    c.connect((host, port))
    for _ in range(m):
        buf = b"x" * size
        while buf:
            n = c.send(buf); sends += 1; sent += n; buf = buf[n:]
    c.close()
print(json.dumps({"sends": sends, "bytes": sent}))
"""

UDP_RECEIVER = r"""
host, port, k = ARGS[0], int(ARGS[1]), int(ARGS[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((host, port))
got = 0
for _ in range(k):
    got += len(s.recv(65536))
print(json.dumps({"recvs": k, "bytes": got}))
"""

UDP_SENDER = r"""
host, port, k, size = ARGS[0], int(ARGS[1]), int(ARGS[2]), int(ARGS[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(k):
    assert s.sendto(b"u" * size, (host, port)) == size
print(json.dumps({"sends": k, "bytes": k * size}))
"""


class Traffic:
    """What one run of the work did: the actors' pids and their own counts."""

    def __init__(self):
        self.pid, self.out = {}, {}

    def go(self, actors, listener=None):
        """Runs the actors, the first (a server) in a thread; the others once
        its socket `listener` = (pair, side, "tcp"|"udp", port) is bound."""
        threads = []

        def run(a):
            self.out[a.comm] = json.loads(a.go()[-1]) if True else None

        for a in actors:
            self.pid[a.comm] = a.pid
        if listener:
            t = threading.Thread(target=run, args=(actors[0],))
            t.start()
            threads.append(t)
            wait_bound(*listener)
            actors = actors[1:]
        for a in actors:
            run(a)
        for t in threads:
            t.join(30)


def wait_bound(pair, side, proto, port, timeout=10):
    flag = "-Hltn" if proto == "tcp" else "-Hlun"
    end = time.time() + timeout
    while time.time() < end:
        out = pair.run(side, ["ss", flag, "sport = :%d" % port], capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.02)
    raise AssertionError("nothing bound to %s port %d" % (proto, port))


def key(*parts):
    """A -f json map key of several values: joined by ','."""
    return ",".join(str(p) for p in parts)


class CookbookNetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def setUp(self):
        self.pair = NetnsPair("cb", unique=True).__enter__()
        self.addCleanup(self.pair.__exit__, None, None, None)
        self.port = 5300

    def tcp(self, k=3, m=5, size=3000):
        """k TCP sessions from side a (cbtcpcli) to a server on side b
        (cbtcpsrv), each m sends of size bytes."""
        t = Traffic()

        def work():
            host = self.pair.addr4["b"]
            srv = Actor(self.pair, "b", "cbtcpsrv", TCP_SERVER, host, self.port, k)
            cli = Actor(self.pair, "a", "cbtcpcli", TCP_CLIENT, host, self.port, k, m, size)
            t.go([srv, cli], (self.pair, "b", "tcp", self.port))
        return t, work

    def udp(self, k=6, size=700):
        """k datagrams of size bytes from side a (cbudpsnd) to side b (cbudprcv)."""
        t = Traffic()

        def work():
            host = self.pair.addr4["b"]
            rcv = Actor(self.pair, "b", "cbudprcv", UDP_RECEIVER, host, self.port, k)
            snd = Actor(self.pair, "a", "cbudpsnd", UDP_SENDER, host, self.port, k, size)
            t.go([rcv, snd], (self.pair, "b", "udp", self.port))
        return t, work

    def connect_closed(self, n=5):
        """n connects to a closed port (ECONNREFUSED) from side a (cbconnfail)."""
        t = Traffic()
        t.go_n = n

        def work():
            t.go([Actor(self.pair, "a", "cbconnfail", CONNECT_CLOSED + "\nprint('{}')", n, 9)])
        return t, work

    def test_net_1(self):
        t, work = self.connect_closed()
        r = run_json(E["net-1"]["bpftrace"], work)
        self.assertEqual(r.maps["@"][key("cbconnfail", ECONNREFUSED)], 5, r)
        t, work = self.connect_closed()
        r = run_json(E["net-1"]["bcc"], work)
        self.assertGreaterEqual(r.counts[str(-ECONNREFUSED)], 5, r)

    def test_net_2(self):
        t, work = self.connect_closed(4)
        r = run_json(E["net-2"]["bpftrace"], work)
        self.assertEqual(keyed(r.maps["@"], lambda k: k.endswith(",cbconnfail")), 4, r)
        t, work = self.connect_closed(4)
        r = run_json(E["net-2"]["bcc"], work)
        self.assertGreaterEqual(sum(sum(m.values()) for m in r.maps.values() if isinstance(m, dict)), 4, r)

    def test_net_3_and_8(self):
        # Accepts of the server: 3 sessions, 3 accept4 calls that returned
        # a connection.
        for eid in ("net-3", "net-8"):
            t, work = self.tcp(k=3, m=1)
            r = run_json(E[eid]["bpftrace"], work)
            self.assertEqual(r.maps["@"][key(t.pid["cbtcpsrv"], "cbtcpsrv")], 3, (eid, r))

    def test_net_4_and_7(self):
        # connect(2)s of the client, and its TCP sockets entering SYN_SENT.
        for eid in ("net-4", "net-7"):
            t, work = self.tcp(k=3, m=1)
            r = run_json(E[eid]["bpftrace"], work)
            self.assertEqual(r.maps["@"][key(t.pid["cbtcpcli"], "cbtcpcli")], 3, (eid, r))

    def test_net_5_and_10(self):
        # Send and receive calls by process: the client's sends and the
        # server's receives (its last one reads the end of the stream).
        for eid in ("net-5", "net-10"):
            t, work = self.tcp()
            r = run_json(E[eid]["bpftrace"], work)
            m = r.maps["@"]
            cli, srv = t.pid["cbtcpcli"], t.pid["cbtcpsrv"]
            self.assertEqual(m[key("tracepoint:sock:sock_send_length", cli, "cbtcpcli")], t.out["cbtcpcli"]["sends"],
                             (eid, r))
            self.assertEqual(m[key("tracepoint:sock:sock_recv_length", srv, "cbtcpsrv")], t.out["cbtcpsrv"]["recvs"],
                             (eid, r))

    def test_net_6(self):
        t, work = self.tcp()
        r = run_json(E["net-6"]["bpftrace"], work)
        m = r.maps["@"]
        self.assertEqual(m[key(t.pid["cbtcpcli"], "cbtcpcli")], 3 * 5 * 3000, r)
        self.assertEqual(m[key(t.pid["cbtcpsrv"], "cbtcpsrv")], 3 * 5 * 3000, r)

    def test_net_9(self):
        t, work = self.tcp()
        r = run_json(E["net-9"]["bpftrace"], work)
        self.assertGreaterEqual(r.maps["@"]["tracepoint:sock:sock_send_length"], t.out["cbtcpcli"]["sends"], r)
        self.assertGreaterEqual(r.maps["@"]["tracepoint:sock:sock_recv_length"], t.out["cbtcpsrv"]["recvs"], r)

    def test_net_11(self):
        # 15 sends of 3000 bytes: the [2K, 4K) bucket.
        t, work = self.tcp()
        r = run_json(E["net-11"]["bpftrace"], work)
        self.assertGreaterEqual(hist_total(r.maps["@send_bytes"], 2048, 4095), 15, r)
        t, work = self.tcp()
        r = run_json(E["net-11"]["bcc"], work)
        self.assertGreaterEqual(hist_total(r.hists["@args->ret"], 2048, 4095), 15, r)

    def test_net_12(self):
        # Every receive of the server is in the histogram (the end of each
        # stream in the 0 bucket).
        t, work = self.tcp()
        r = run_json(E["net-12"]["bpftrace"], work)
        self.assertGreaterEqual(hist_total(r.maps["@recv_bytes"]), t.out["cbtcpsrv"]["recvs"], r)
        self.assertGreaterEqual(hist_total(r.maps["@recv_bytes"], 0, 0), 3, r)
        t, work = self.tcp()
        r = run_json(E["net-12"]["bcc"], work)
        self.assertGreaterEqual(hist_total(r.hists["@args->ret"], 1), t.out["cbtcpsrv"]["recvs"] - 3, r)

    def test_net_13(self):
        # Each session ends with both sockets destroyed.
        for form in ("bpftrace", "bcc"):
            t, work = self.tcp(k=3, m=1)
            r = run_json(E["net-13"][form], work, settle=0.5)
            m = r.maps["@"] if form == "bpftrace" else r.counts
            self.assertGreaterEqual(m["tracepoint:tcp:tcp_destroy_sock"], 6, (form, r))
            self.assertGreaterEqual(m["tracepoint:tcp:tcp_probe"], 3, (form, r))

    def test_net_14(self):
        t, work = self.udp()
        r = run_json(E["net-14"]["bpftrace"], work)
        m = r.maps["@"]
        self.assertEqual(m[key("tracepoint:sock:sock_send_length", t.pid["cbudpsnd"], "cbudpsnd")], 6, r)
        self.assertEqual(m[key("tracepoint:sock:sock_recv_length", t.pid["cbudprcv"], "cbudprcv")], 6, r)

    def test_net_15_and_16(self):
        # 6 datagrams of 700 bytes: the [512, 1K) bucket, sent and received.
        for eid, name in (("net-15", "@send_bytes"), ("net-16", "@recv_bytes")):
            t, work = self.udp()
            r = run_json(E[eid]["bpftrace"], work)
            self.assertGreaterEqual(hist_total(r.maps[name], 512, 1023), 6, (eid, r))
            t, work = self.udp()
            r = run_json(E[eid]["bcc"], work)
            self.assertGreaterEqual(hist_total(r.hists["@args->ret"], 512, 1023), 6, (eid, r))

    def test_net_17(self):
        t, work = self.udp()
        r = run_json(E["net-17"]["bpftrace"], work)
        self.assertGreaterEqual(r.maps["@"]["tracepoint:sock:sock_send_length"], 6, r)
        self.assertGreaterEqual(r.maps["@"]["tracepoint:sock:sock_recv_length"], 6, r)
        t, work = self.udp()
        r = run_json(E["net-17"]["bcc"], work)
        self.assertGreaterEqual(r.counts["tracepoint:sock:sock_send_length"], 6, r)
        self.assertGreaterEqual(r.counts["tracepoint:sock:sock_recv_length"], 6, r)

    def test_net_18(self):
        # Each datagram leaves through side a's veth: a net_dev_xmit each.
        for form in ("bpftrace", "bcc"):
            t, work = self.udp()
            r = run_json(E["net-18"][form], work)
            total = sum(sum(m.values()) for m in r.maps.values() if isinstance(m, dict))
            self.assertGreaterEqual(total, 6, (form, r))

    def test_net_19_and_22(self):
        # Side b's veth receives the 6 datagrams (and side a's sends them).
        t, work = self.udp()
        r = run_json(E["net-19"]["bpftrace"], work)
        self.assertGreaterEqual(hist_total(r.maps["@"][self.pair.dev["b"]]), 6, r)
        t, work = self.udp()
        r = run_json(E["net-22"]["bpftrace"], work)
        m = r.maps["@"]
        self.assertGreaterEqual(m[key("tracepoint:net:net_dev_xmit", self.pair.dev["a"])], 6, r)
        self.assertGreaterEqual(m[key("tracepoint:net:netif_receive_skb", self.pair.dev["b"])], 6, r)

    def test_net_20(self):
        # 512 KiB over a pair dropping 5% of the segments sent to the
        # server: the sender (side b) retransmits.
        self.pair.__exit__(None, None, None)
        port = 5301
        with LossyPair("cbr", port) as pair:
            r = run_json(E["net-20"]["bpftrace"],
                         lambda: (tcp_session(pair, "a", pair.addr4["a"], port, 512 << 10), pair.wait_settled(port)))
            dropped = pair.dropped()
        self.assertGreaterEqual(dropped, 1)
        self.assertGreaterEqual(r.maps["@"].get(key("tracepoint:tcp:tcp_retransmit_skb", pair.addr4["b"]), 0), 1, r)


if __name__ == "__main__":
    unittest.main()
