"""Packaged tools under --prometheus: each serves its maps under the names
and labels its header declares, and the tools that print a line per event
count their events into served-only counters, checked against the work the
test made (a loop device's own counters, loopback TCP sessions of known
payloads, a process of a known number of system calls) and against the
lines the tool printed; a served-only map never prints."""
import os
import socket
import threading
import time
import unittest

from blockio import LoopDev
from cpuwork import Work
from metricsrun import Served, value, wait_value
from toolrun import LossyPair, mount_tracefs, tcp_session


class ToolMetricsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_biolatency_by_disk(self):
        with LoopDev() as dev:
            with Served(["biolatency", "-D", "-d", dev.name]) as s:
                before = dev.stat()
                dev.dd(count=30)
                dev.dd(write=False, count=20)
                after = dev.stat()
                done = (after["reads"] - before["reads"]) + (after["writes"] - before["writes"])
                self.assertEqual(done, 50)
                got = wait_value(s, "bpfscope_biolatency_usecs_count", done, disk=dev.name)
                page = s.scrape()
                self.assertEqual(value(page, "bpfscope_biolatency_usecs_bucket", disk=dev.name, le="+Inf"), done)
                status, _, body = s.get()
                self.assertIn("# HELP bpfscope_biolatency_usecs Block I/O latency in microseconds", body)
                run = s.finish()
        self.assertEqual(got + run.missed(), done, run)
        self.assertIn("disk = %s" % dev.name, "\n".join(run.lines))

    def test_tcplife_sessions_and_bytes(self):
        # K loopback sessions: the client sends 1000 bytes, the server 500.
        k = 12
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(k)
        port = listener.getsockname()[1]

        def serve():
            for _ in range(k):
                c, _ = listener.accept()
                got = 0
                while got < 1000:
                    got += len(c.recv(4096))
                c.sendall(b"y" * 500)
                c.close()

        comm = open("/proc/self/comm").read().strip()
        with Served(["tcplife", "-D", str(port)]) as s:
            t = threading.Thread(target=serve)
            t.start()
            for _ in range(k):
                c = socket.create_connection(("127.0.0.1", port))
                c.sendall(b"x" * 1000)
                while c.recv(4096):
                    pass
                c.close()
            t.join(30)
            listener.close()
            got = wait_value(s, "bpfscope_tcplife_sessions_total", k, comm=comm, rport=port)
            page = s.scrape()
            run = s.finish()
        self.assertEqual(got, k, run)
        # tcp_sock's byte counters follow sequence numbers: bytes_acked
        # counts the client's SYN and FIN as a byte each beside the 1000
        # sent, bytes_received the server's FIN beside its 500.
        tx = value(page, "bpfscope_tcplife_tx_bytes_total", comm=comm, rport=port)
        rx = value(page, "bpfscope_tcplife_rx_bytes_total", comm=comm, rport=port)
        self.assertEqual(tx, 1002 * k)
        self.assertEqual(rx, 501 * k)
        # One printed line per session counted, with the same bytes (to the
        # 0.005 KB the columns show), and no map printed.
        printed = [l.split() for l in run.lines[1:] if l.split()[5:6] == [str(port)]]
        self.assertEqual(len(printed), k, run)
        self.assertAlmostEqual(sum(float(c[6]) for c in printed) * 1024, tx, delta=0.005 * 1024 * k)
        self.assertAlmostEqual(sum(float(c[7]) for c in printed) * 1024, rx, delta=0.005 * 1024 * k)
        self.assertFalse(any(l.startswith("@") for l in run.lines), run)

    def test_biosnoop_counts_its_events(self):
        # Served-only counters of the lines biosnoop prints, by disk and op.
        with LoopDev() as dev:
            with Served(["biosnoop", "-d", dev.name]) as s:
                dev.dd(count=25)
                dev.dd(write=False, count=15)
                wait_value(s, "bpfscope_biosnoop_ios_total", 15, disk=dev.name, op="R")
                page = s.scrape()
                run = s.finish()
        self.assertEqual(run.rc, 0, run)
        printed = {op: [l for l in run.lines if l.split()[3:5] == [dev.name, op]] for op in ("R", "W")}
        self.assertEqual(value(page, "bpfscope_biosnoop_ios_total", disk=dev.name, op="W"), 25)
        self.assertEqual(value(page, "bpfscope_biosnoop_ios_total", disk=dev.name, op="R"), 15)
        self.assertEqual(len(printed["W"]), 25, run)
        self.assertEqual(len(printed["R"]), 15, run)
        self.assertEqual(value(page, "bpfscope_biosnoop_bytes_total", disk=dev.name, op="W"), 25 * 4096)
        self.assertFalse(any(l.startswith("@") for l in run.lines), run)

    def test_tcpretrans_counts_its_events(self):
        # Under induced loss: the served-only counter of retransmits to the
        # pair's addresses equals the lines tcpretrans printed for them.
        with LossyPair("rtxm", 5303, match="meta length > 200") as pair:
            with Served(["tcpretrans"]) as s:
                tcp_session(pair, "a", pair.addr4["a"], 5303, 3000000)
                pair.wait_settled(5303)
                time.sleep(0.3)
                page = s.scrape()
                run = s.finish()
            events = pair.mine(run.lines[1:])
        served = sum(v for (name, labels), v in page.items() if name == "bpfscope_tcpretrans_retransmits_total"
                     and dict(labels)["raddr"] in pair.addr4.values())
        self.assertGreater(len(events), 0, run)
        self.assertEqual(served, len(events), run)

    def test_syscount_by_syscall(self):
        n = 3000
        with Work("calls", n) as w:
            with Served(["syscount", "-p", str(w.pid)]) as s:
                w.run()
                got = wait_value(s, "bpfscope_syscount_calls_total", n, syscall="getppid")
                page = s.scrape()
                s.finish()
        self.assertEqual(got, n)
        self.assertEqual(value(page, "bpfscope_syscount_calls_total", syscall="close"), n)
        # -P: by process, which makes a few more calls than the 2n; the
        # served count is the one the table prints.
        with Work("calls", n) as w:
            with Served(["syscount", "-P", "-p", str(w.pid)]) as s:
                w.run()
                wait_value(s, "bpfscope_syscount_calls_total", 2 * n, pid=w.pid, comm="cpu_work")
                got = value(s.scrape(), "bpfscope_syscount_calls_total", pid=w.pid, comm="cpu_work")
                run = s.finish()
        rows = [l.split() for l in run.lines if l.split()[:2] == [str(w.pid), "cpu_work"]]
        self.assertEqual(rows[-1][2:], [str(int(got))], run)
        self.assertGreaterEqual(got, 2 * n)


if __name__ == "__main__":
    unittest.main()
