"""--prometheus on scripts: what a scrape reads back equals the work the test
did (getppid() calls of the test's own pid), counters never go back across
clear() and zero(), OpenMetrics is served when asked for, the run's own
families are there, and bad requests get the right status without stalling
the event loop or losing events (1,000 concurrent scrapes beside a printf
stream)."""
import asyncio
import os
import socket
import subprocess
import threading
import time
import unittest

from metricsrun import Served, check, parse, value, wait_value
from toolrun import BPFSCOPE

PID = os.getpid()


def calls(n):
    for _ in range(n):
        os.getppid()


class EndpointTest(unittest.TestCase):
    def test_maps_at_scrape_time(self):
        prog = ("tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @calls[comm] = count(); @n = count(); "
                "@h = hist(7); @l = lhist(25, 0, 100, 10); @s = stats(5); @mx = max(9); @g = 42; }" % PID)
        with Served(["-e", prog]) as s:
            comm = open("/proc/self/comm").read().strip()
            calls(1000)
            self.assertEqual(wait_value(s, "bpfscope_n_total", 1000), 1000)
            page = s.scrape()
            self.assertEqual(value(page, "bpfscope_calls_total", key=comm), 1000)
            self.assertEqual(value(page, "bpfscope_h_bucket", le="3"), 0)
            self.assertEqual(value(page, "bpfscope_h_bucket", le="7"), 1000)
            self.assertEqual(value(page, "bpfscope_h_count"), 1000)
            self.assertEqual(value(page, "bpfscope_h_sum"), 7000)
            self.assertEqual(value(page, "bpfscope_l_sum"), 25000)
            self.assertEqual(value(page, "bpfscope_l_bucket", le="19"), 0)
            self.assertEqual(value(page, "bpfscope_l_bucket", le="29"), 1000)
            self.assertEqual(value(page, "bpfscope_s_count"), 1000)
            self.assertEqual(value(page, "bpfscope_s_sum"), 5000)
            self.assertEqual(value(page, "bpfscope_s_min"), 5)
            self.assertEqual(value(page, "bpfscope_s_max"), 5)
            self.assertEqual(value(page, "bpfscope_mx"), 9)
            self.assertEqual(value(page, "bpfscope_g"), 42)
            # Read at scrape time: more work shows at the next scrape.
            calls(500)
            self.assertEqual(wait_value(s, "bpfscope_n_total", 1500), 1500)
            run = s.finish()
        self.assertEqual(run.rc, 0, run)
        # The text output is the usual one.
        self.assertIn("@n: 1500", run.lines)

    def test_run_families(self):
        prog = "tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @n = count(); }" % PID
        with Served(["-e", prog]) as s:
            page = s.scrape()
            self.assertEqual(value(page, "bpfscope_build_info", version="0.1.0"), 1)
            self.assertEqual(value(page, "bpfscope_lost_events_total"), 0)
            probe = "tracepoint:syscalls:sys_enter_getppid"
            self.assertEqual(value(page, "bpfscope_probe_info", probe=probe, mechanism="tracepoint"), 1)
            self.assertEqual(value(page, "bpfscope_probe_skipped_total", probe=probe), 0)
            self.assertEqual(value(page, "bpfscope_map_full_total", map="@n"), 0)

    def test_counters_never_go_back(self):
        # print-then-clear every 50 ms, clear() and zero(): the served counters
        # only grow, and end at the work done.
        prog = ("tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @p = count(); @c = count(); @z = sum(2); "
                "@h = hist(3); } interval:ms:50 { print(@p); clear(@p); clear(@c); zero(@z); zero(@h); }" % PID)
        with Served(["-e", prog]) as s:
            last = {}
            for _ in range(20):
                calls(100)
                page = s.scrape()
                for name in ("bpfscope_p_total", "bpfscope_c_total", "bpfscope_z_total", "bpfscope_h_count",
                             "bpfscope_h_sum"):
                    v = value(page, name) or 0
                    self.assertGreaterEqual(v, last.get(name, 0), name)
                    last[name] = v
            time.sleep(0.2)
            page = s.scrape()
            self.assertEqual(value(page, "bpfscope_p_total"), 2000)
            self.assertEqual(value(page, "bpfscope_c_total"), 2000)
            self.assertEqual(value(page, "bpfscope_z_total"), 4000)
            self.assertEqual(value(page, "bpfscope_h_count"), 2000)
            self.assertEqual(value(page, "bpfscope_h_bucket", le="3"), 2000)
            self.assertEqual(value(page, "bpfscope_h_sum"), 6000)

    def test_openmetrics(self):
        prog = "tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @n = count(); }" % PID
        with Served(["-e", prog]) as s:
            status, headers, body = s.get(headers={"Accept": "application/openmetrics-text;version=1.0.0"})
            self.assertEqual(status, 200)
            self.assertEqual(headers["Content-Type"], "application/openmetrics-text; version=1.0.0; charset=utf-8")
            self.assertTrue(body.endswith("# EOF\n"), body)
            check(body)
            status, headers, body = s.get()
            self.assertEqual(headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
            self.assertNotIn("# EOF", body)

    def test_bad_requests(self):
        prog = "tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @n = count(); }" % PID
        with Served(["-e", prog]) as s:
            self.assertEqual(s.get("/nope")[0], 404)
            self.assertEqual(s.get("/metrics/x")[0], 404)
            status, headers, _ = s.get(method="POST", data=b"x")
            self.assertEqual(status, 405)
            self.assertEqual(headers["Allow"], "GET, HEAD")
            status, headers, body = s.get("/")
            self.assertEqual(status, 200)
            self.assertIn('href="/metrics"', body)

    def test_token(self):
        with open("/tmp/bpfscope-token-%d" % PID, "w") as f:
            f.write("s3cret-token\n")
        try:
            prog = "tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @n = count(); }" % PID
            with Served(["--prometheus-token", f.name, "-e", prog]) as s:
                for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer s3cret-toke"},
                                {"Authorization": "Basic s3cret-token"}):
                    status, h, _ = s.get(headers=headers)
                    self.assertEqual(status, 401, headers)
                    self.assertIn("Bearer", h["WWW-Authenticate"])
                self.assertEqual(s.get("/nope")[0], 401)
                calls(10)
                self.assertEqual(wait_value(s, "bpfscope_n_total", 10, token="s3cret-token"), 10)
        finally:
            os.unlink(f.name)

    def test_options(self):
        for args, err in (
                (["--prometheus", "nope"], '--prometheus: "nope" is not [ADDR:]PORT'),
                (["--prometheus", "70000"], '--prometheus: "70000" is not [ADDR:]PORT'),
                (["--prometheus", "::1:9100"], '--prometheus: "::1:9100" is not [ADDR:]PORT'),
                (["--max-series", "5"], "--max-series applies to the metrics endpoint"),
                (["--prometheus-token", "/nonexistent"], "--prometheus-token: cannot read /nonexistent"),
                (["--prometheus", "0", "--max-series", "0"], '--max-series: "0" is not a positive number')):
            p = subprocess.run([BPFSCOPE] + args + ["-e", "BEGIN { exit(); }"], capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(p.returncode, 1, (args, p))
            self.assertIn("ERROR: " + err, p.stderr, args)
        # A port that is taken: a clear error, nothing left attached.
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        p = subprocess.run([BPFSCOPE, "--prometheus", str(port), "-e", "tracepoint:syscalls:sys_enter_getppid { }"],
                           capture_output=True, text=True, timeout=30)
        sock.close()
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("ERROR: --prometheus: cannot listen on 127.0.0.1 port %d" % port, p.stderr)

    def test_storm_and_slow_clients(self):
        # Slow clients hold connections (one sends half a request, one
        # nothing); three bursts of 1,000 scrapes at once; meanwhile every
        # printf event arrives, in order, none lost.
        prog = ("tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @n = count(); printf(\"call %%d\\n\", @n); }"
                % PID)
        with Served(["-e", prog]) as s:
            slow = [socket.create_connection(("127.0.0.1", s.port)) for _ in range(2)]
            slow[0].sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            statuses = []

            async def scrape():
                r, w = await asyncio.open_connection("127.0.0.1", s.port)
                w.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = await r.read()
                w.close()
                # A connection closed with no answer counts as b"none".
                statuses.append((data.split(b" ", 2) + [b"none", b"none"])[1])

            async def storm():
                for _ in range(3):
                    await asyncio.gather(*(scrape() for _ in range(1000)))

            t = threading.Thread(target=lambda: asyncio.run(storm()))
            t0 = time.time()
            t.start()
            n = 0
            # Calls all through the storm, at a pace this process's own
            # reader of the output keeps up with (it shares the GIL).
            while t.is_alive() and time.time() - t0 < 120:
                calls(50)
                n += 50
                time.sleep(0.002)
            t.join(1)
            storm_s = time.time() - t0
            self.assertFalse(t.is_alive())
            self.assertEqual(statuses.count(b"200"), 3000, set(statuses))
            # A scrape still answers while the slow clients hold on.
            self.assertEqual(s.get()[0], 200)
            for c in slow:
                c.close()
            self.assertEqual(wait_value(s, "bpfscope_n_total", n), n)
            self.assertTrue(s.proc.wait_for(lambda ls: ls and ls[-1] == "call %d" % n, 20))
            run = s.finish()
        self.assertEqual(run.rc, 0, run)
        events = [l for l in run.lines if l.startswith("call ")]
        self.assertEqual(events, ["call %d" % i for i in range(1, n + 1)])
        self.assertNotIn("lost", run.stderr.lower(), run.stderr)
        print("3 x 1000 concurrent scrapes beside %d printf events: %.2f s" % (n, storm_s))


if __name__ == "__main__":
    unittest.main()
