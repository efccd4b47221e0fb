"""`bpfscope serve`: biolatency, tcplife and runqlat in one process behind one
endpoint. Each tool's metrics are there under its names, its run's counters
carry a tool label, the page passes promtool, the process stays under
15 MB RSS, prints nothing on stdout, and SIGTERM ends it with status 0.
Bad command lines get clear errors."""
import os
import re
import signal
import socket
import subprocess
import time
import unittest

from blockio import LoopDev
from metricsrun import SERVING, check, parse, value, wait_value
from toolrun import BPFSCOPE, Process, mount_tracefs


def sanitized():
    """Whether the binary is the ASan build, whose shadow memory makes RSS
    meaningless."""
    with open(BPFSCOPE, "rb") as f:
        return b"libasan.so" in f.read()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M).group(1))


class ServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def start(self, args):
        p = Process([BPFSCOPE, "serve", "--prometheus", "127.0.0.1:0"] + args, lambda ls: False)
        self.assertTrue(p.wait_for(lambda _: any(l and SERVING.match(l) for l in p.err), 15), p.err)
        port = int(SERVING.match(next(l for l in p.err if l and SERVING.match(l))).group(2))
        return p, port

    def scrape(self, port):
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            body = r.read().decode()
        check(body)
        return parse(body), body

    def test_three_tools(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
        with LoopDev() as dev:
            p, mport = self.start(["biolatency", "-D", "-d", dev.name, "tcplife", "-D", str(port), "runqlat"])
            try:
                # Every tool attached: its probes are on the page.
                end = time.time() + 15
                while time.time() < end:
                    page, body = self.scrape(mport)
                    tools = {dict(k[1]).get("tool") for k in page if k[0] == "bpfscope_probe_info"}
                    if tools == {"biolatency", "tcplife", "runqlat"}:
                        break
                    time.sleep(0.2)
                self.assertEqual(tools, {"biolatency", "tcplife", "runqlat"}, body)
                dev.dd(count=20)
                for _ in range(5):
                    c = socket.create_connection(("127.0.0.1", port))
                    listener.accept()[0].close()
                    c.close()
                time.sleep(0.5)
                page, body = self.scrape(mport)
                self.assertEqual(value(page, "bpfscope_biolatency_usecs_count", disk=dev.name), 20)
                comm = open("/proc/self/comm").read().strip()
                self.assertEqual(value(page, "bpfscope_tcplife_sessions_total", comm=comm, rport=port), 5)
                self.assertGreater(value(page, "bpfscope_runqlat_usecs_count"), 0)
                self.assertEqual(value(page, "bpfscope_map_full_total", map="@usecs", tool="runqlat"), 0)
                # Lost events: a series per tool.
                lost = {dict(k[1]).get("tool") for k in page if k[0] == "bpfscope_lost_events_total"}
                self.assertEqual(lost, {"biolatency", "tcplife", "runqlat"}, body)
                self.assertEqual(value(page, "bpfscope_lost_events_total", tool="tcplife"), 0)
                # The tools' working maps are not served.
                self.assertNotIn("bpfscope_birth", body)
                self.assertNotIn("bpfscope_start", body)
                rss = rss_kb(p.proc.pid)
                print("serve biolatency tcplife runqlat: %.1f MB RSS" % (rss / 1024))
                if not sanitized():
                    self.assertLess(rss, 15 * 1024)
            finally:
                listener.close()
                t0 = time.time()
                p.stop(signal.SIGTERM)
                run = p.finish()
        self.assertEqual(run.rc, 0, run)
        self.assertLess(time.time() - t0, 5)
        self.assertEqual(run.lines, [], run)

    def test_bad_command_lines(self):
        for args, err in (
                (["biolatency"], "ERROR: serve needs --prometheus [ADDR:]PORT"),
                (["--prometheus", "0"], "ERROR: serve: no tool given"),
                (["--prometheus", "0", "nosuchtool"], "ERROR: serve: nosuchtool is no tool"),
                (["--prometheus", "0", "-q", "biolatency"], "ERROR: serve: unknown option -q"),
                (["--prometheus", "0", "biolatency", "--prometheus", "1"],
                 "ERROR: serve: --prometheus and its options come before the first tool"),
                (["--prometheus", "0", "biolatency", "--cmd", "true"], "ERROR: serve: biolatency: -c runs no command")):
            p = subprocess.run([BPFSCOPE, "serve"] + args, capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, (args, p))
            self.assertIn(err, p.stderr, args)
        # A tool's own bad option: its usage error, as when run alone.
        p = subprocess.run([BPFSCOPE, "serve", "--prometheus", "0", "biolatency", "-Z"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("biolatency: invalid option -- 'Z'", p.stderr)


if __name__ == "__main__":
    unittest.main()
