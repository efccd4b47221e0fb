"""A real Prometheus server (Debian's prometheus, on loopback, its data in a
temporary directory) scrapes two bpfscope endpoints that stand in for two
machines: each counts the system calls and TCP connections of its own
cgroup's processes and times the I/O of its own loop device. The test makes
known work on both, waits for scrapes, and checks what Prometheus's HTTP API
answers: counter totals, `sum by (comm) (rate(...))` across the machines,
and `histogram_quantile(0.99, ...)` of the I/O histograms, each against the
work done and the raw samples Prometheus stored."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

from blockio import LoopDev
from metricsrun import Served, value
from toolrun import Cgroup

SCRAPE_S = 0.5
SCRAPE = "500ms"  # SCRAPE_S as Prometheus writes a duration
TOKEN = "e2e-%d" % os.getpid()

SCRIPT = """
tracepoint:syscalls:sys_enter_getppid /cgroup == cgroupid("%(cg)s")/ { @calls[(comm=comm)] = count(); }
tracepoint:sock:inet_sock_set_state
/cgroup == cgroupid("%(cg)s") && args.newstate == TCP_SYN_SENT/ { @connects[(comm=comm)] = count(); }
tracepoint:block:block_rq_issue /args.dev == %(dev)d/ { @start[args.sector] = nsecs; }
tracepoint:block:block_rq_complete /args.dev == %(dev)d && @start[args.sector] != 0/ {
  @io_usecs = hist((nsecs - @start[args.sector]) / 1000); delete(@start[args.sector]);
}
"""

# comm -> getppid() calls, TCP connections; per machine.
WORK = {
    "a": {"wl": (3000, 4), "wl_a": (1200, 2)},
    "b": {"wl": (2000, 3), "wl_b": (700, 5)},
}
IOS = {"a": 40, "b": 25}

WORKER = r"""
import ctypes, os, socket, sys
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
for _ in range(int(sys.argv[2])):
    os.getppid()
for _ in range(int(sys.argv[3])):
    socket.create_connection(("127.0.0.1", int(sys.argv[4]))).close()
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prometheus:
    """prometheus on 127.0.0.1, scraping `targets` every SCRAPE_S with the token."""

    def __init__(self, targets, features=()):
        self.dir = tempfile.mkdtemp(prefix="bpfscope-prom-")
        self.port = free_port()
        token_file = os.path.join(self.dir, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: %s\n  scrape_timeout: %s\n"
                    "scrape_configs:\n  - job_name: bpfscope\n    authorization:\n      credentials_file: %s\n"
                    "    static_configs:\n      - targets: [%s]\n"
                    % (SCRAPE, SCRAPE, token_file, ", ".join("'%s'" % t for t in targets)))
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"] +
            ["--enable-feature=" + f for f in features],
            stdout=self.log, stderr=self.log)
        end = time.time() + 60
        while time.time() < end and self.proc.poll() is None:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=1)
                return
            except Exception:
                time.sleep(0.2)
        raise AssertionError("prometheus did not get ready:\n" + self.stop())

    def query(self, q, at=None):
        params = {"query": q}
        if at is not None:
            params["time"] = "%.3f" % at
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.seek(0)
        out = self.log.read()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return out


def by(result, label):
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


class PrometheusTest(unittest.TestCase):
    def test_two_machines(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        tcp_port = listener.getsockname()[1]
        with open("/tmp/bpfscope-e2e-token-%d" % os.getpid(), "w") as f:
            f.write(TOKEN + "\n")
        token_file = f.name
        with Cgroup("prom_a") as cga, Cgroup("prom_b") as cgb, LoopDev() as da, LoopDev() as db:
            machines = {"a": (cga, da), "b": (cgb, db)}
            served = {}
            prom = None
            try:
                for m, (cg, dev) in machines.items():
                    major, minor = dev.devno()
                    prog = SCRIPT % {"cg": cg.child, "dev": (major << 20) | minor}
                    served[m] = Served(["-q", "--prometheus-token", token_file, "-e", prog])
                targets = {m: "127.0.0.1:%d" % s.port for m, s in served.items()}
                prom = Prometheus(targets.values())

                def work(rounds_calls):
                    for m, (cg, dev) in machines.items():
                        for comm, (n, conns) in WORK[m].items():
                            argv = cg.argv([sys.executable, "-c", WORKER, comm, str(rounds_calls(n)),
                                            str(conns if rounds_calls(n) == n else 0), str(tcp_port)])
                            subprocess.run(argv, check=True, timeout=60)

                def accept_all():
                    listener.settimeout(0.1)
                    while True:
                        try:
                            listener.accept()[0].close()
                        except OSError:
                            return

                # One call of each and one I/O first: the series exist before
                # the work, so that rate() sees the work as an increase.
                work(lambda n: 1)
                for m, (cg, dev) in machines.items():
                    dev.dd(count=1)
                self.wait_up(prom, served, 2)
                t_work = time.time()
                work(lambda n: n)
                accept_all()
                for m, (cg, dev) in machines.items():
                    dev.dd(count=IOS[m])
                time.sleep(4 * SCRAPE_S)
                self.wait_value(prom, 'sum(bpfscope_io_usecs_count)', sum(IOS.values()) + len(IOS))
                at = time.time()
                self.check_counters(prom, targets, at)
                window = "%ds" % int(at - t_work + 2 * SCRAPE_S + 1)
                self.check_rates(prom, at, window)
                self.check_quantile(prom, at, window)
            finally:
                runs = {m: s.finish() for m, s in served.items()}
                log = prom.stop() if prom else ""
                listener.close()
                os.unlink(token_file)
            for m, run in runs.items():
                self.assertEqual(run.rc, 0, run)
            self.assertNotIn("level=error", log, log)

    def wait_up(self, prom, served, scrapes):
        end = time.time() + 30
        while time.time() < end:
            up = prom.query("up")
            if len(up) == len(served) and all(r["value"][1] == "1" for r in up):
                n = prom.query("count_over_time(up[1m])")
                if all(float(r["value"][1]) >= scrapes for r in n):
                    return
            time.sleep(SCRAPE_S)
        self.fail("targets not up: %r" % prom.query("up"))

    def wait_value(self, prom, q, want, timeout=30):
        end = time.time() + timeout
        got = None
        while time.time() < end:
            r = prom.query(q)
            got = float(r[0]["value"][1]) if r else None
            if got == want:
                return
            time.sleep(SCRAPE_S)
        self.fail("%s: %r, not %r" % (q, got, want))

    def check_counters(self, prom, targets, at):
        # Totals per machine and comm, and the connections across machines.
        for m, target in targets.items():
            calls = by(prom.query('bpfscope_calls_total{instance="%s"}' % target, at), "comm")
            # n calls of each comm, and the first one of each.
            self.assertEqual(calls, {c: float(n + 1) for c, (n, _) in WORK[m].items()}, m)
            conns = by(prom.query('bpfscope_connects_total{instance="%s"}' % target, at), "comm")
            self.assertEqual(conns, {c: float(k) for c, (_, k) in WORK[m].items()}, m)
            ios = prom.query('bpfscope_io_usecs_count{instance="%s"}' % target, at)
            self.assertEqual(float(ios[0]["value"][1]), IOS[m] + 1)
        total = prom.query("sum(bpfscope_connects_total)", at)
        self.assertEqual(float(total[0]["value"][1]), sum(k for w in WORK.values() for _, k in w.values()))
        skipped = prom.query("sum(bpfscope_probe_skipped_total)", at)
        lost = prom.query("sum(bpfscope_lost_events_total)", at)
        self.assertEqual(float(lost[0]["value"][1]), 0)
        print("probe firings skipped (served): %s" % skipped[0]["value"][1])

    def check_rates(self, prom, at, window):
        # rate() across both machines, by comm. Prometheus extrapolates
        # within the window, so each series' rate lies between its increase
        # over the window and its increase over the span of its samples.
        w = window
        rates = by(prom.query("sum by (comm) (rate(bpfscope_calls_total[%s]))" % w, at), "comm")
        raw = prom.query("bpfscope_calls_total[%s]" % w, at)
        low, high = {}, {}
        for series in raw:
            comm = series["metric"]["comm"]
            vals = [(float(t), float(v)) for t, v in series["values"]]
            delta = vals[-1][1] - vals[0][1]
            low[comm] = low.get(comm, 0) + delta / int(window[:-1])
            high[comm] = high.get(comm, 0) + delta / (vals[-1][0] - vals[0][0])
        expected = {"wl": 3000 + 2000, "wl_a": 1200, "wl_b": 700}  # the work after the first calls
        self.assertEqual(set(rates), set(expected))
        for comm, want in expected.items():
            series = [s for s in raw if s["metric"]["comm"] == comm]
            increase = sum(float(s["values"][-1][1]) - float(s["values"][0][1]) for s in series)
            self.assertEqual(increase, want, comm)
            self.assertGreaterEqual(rates[comm], low[comm] * (1 - 1e-9), comm)
            self.assertLessEqual(rates[comm], high[comm] * (1 + 1e-9), comm)

    def check_quantile(self, prom, at, window):
        q = prom.query("histogram_quantile(0.99, sum by (le) (rate(bpfscope_io_usecs_bucket[%s])))" % window, at)
        p99 = float(q[0]["value"][1])
        # The bucket that holds the 99th percentile of the work's I/O, from
        # the buckets' increases over the same window.
        buckets = sorted((float(r["metric"]["le"]), float(r["value"][1])) for r in prom.query(
            "sum by (le) (increase(bpfscope_io_usecs_bucket[%s]))" % window, at))
        total = buckets[-1][1]
        self.assertGreater(total, 0)
        prev = None
        for le, cum in buckets:
            if cum >= 0.99 * total:
                break
            prev = le
        self.assertGreaterEqual(p99, prev if prev is not None else 0)
        self.assertLessEqual(p99, le)
        print("p99 I/O latency across both machines: %.1f us (bucket (%s, %s])" % (p99, prev, le))


class NativeHistogramTest(unittest.TestCase):
    def test_native_histogram(self):
        # With native histograms on, Prometheus asks for protobuf: hist()
        # arrives as a schema-0 native histogram, whose count, sum and p99
        # agree with the text page's classic buckets read at the same time.
        with open("/tmp/bpfscope-e2e-token-%d" % os.getpid(), "w") as f:
            f.write(TOKEN + "\n")
        with LoopDev() as dev, Cgroup("prom_n") as cg:
            major, minor = dev.devno()
            prog = SCRIPT % {"cg": cg.child, "dev": (major << 20) | minor}
            served = Served(["-q", "--prometheus-token", f.name, "-e", prog])
            prom = None
            try:
                prom = Prometheus(["127.0.0.1:%d" % served.port], features=["native-histograms"])
                dev.dd(count=30)
                dev.dd(write=False, count=10)
                text = served.scrape(token=TOKEN)
                count = value(text, "bpfscope_io_usecs_count")
                self.assertEqual(count, 40)
                end = time.time() + 30
                got = None
                while time.time() < end:
                    r = prom.query("histogram_count(bpfscope_io_usecs)")
                    got = float(r[0]["value"][1]) if r else None
                    if got == count:
                        break
                    time.sleep(SCRAPE_S)
                self.assertEqual(got, count)
                at = time.time()
                self.assertEqual(float(prom.query("histogram_sum(bpfscope_io_usecs)", at)[0]["value"][1]),
                                 value(text, "bpfscope_io_usecs_sum"))
                # Prometheus stored no classic buckets: the native histogram
                # replaced them.
                self.assertEqual(prom.query("bpfscope_io_usecs_bucket", at), [])
                p99 = float(prom.query("histogram_quantile(0.99, bpfscope_io_usecs)", at)[0]["value"][1])
                buckets = sorted((float(dict(k[1])["le"]), v) for k, v in text.items()
                                 if k[0] == "bpfscope_io_usecs_bucket" and dict(k[1])["le"] != "+Inf")
                prev = 0
                for le, cum in buckets:
                    if cum >= 0.99 * count:
                        break
                    prev = le
                # Native bucket (2^(i-1), 2^i] is the classic (2^(i-1) - 1, 2^i - 1].
                self.assertGreaterEqual(p99, prev)
                self.assertLessEqual(p99, le + 1)
                print("native p99 %.1f us in (%s, %s]" % (p99, prev, le))
            finally:
                served.finish()
                log = prom.stop() if prom else ""
                os.unlink(f.name)
            self.assertNotIn("level=error", log, log)


if __name__ == "__main__":
    unittest.main()
