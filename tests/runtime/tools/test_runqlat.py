"""runqlat and runqlen on work of known shape (tests/runtime/helpers/cpu_work.c):
a process that sleeps N times is woken N times, so runqlat -p counts N
latencies; two processes spinning on one CPU wait for each other a
scheduler slice at a time, which runqlat shows as run-queue latency and
runqlen as a queued thread on that CPU."""
import os
import re
import unittest

from cpuwork import Work
from histrun import json_hists, text_hists, total
from schedwitness import SwitchIns, run_witnessed
from toolrun import mount_tracefs, run_tool, start_tool, start_twin

SLEEPS = 40


def count(run, unit="usecs"):
    hists = text_hists(run.lines)
    return sum(total(b) for (u, _), b in hists.items() if u == unit)


class RunqlatTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def assert_latencies(self, n, sw, run):
        """runqlat -p counts one latency per switch-in of the process that
        follows its wakeup or its preemption while runnable: with the
        process blocked when the witness's window opens and closes, and
        traced over all of it, one per switch-in the tracepoint fired in the
        window ("go" on stdin, each nanosleep's end, any preemption) and no
        other. The kernel's own count of switch-ins (pcount) bounds it from
        above and covers at least "go" and the sleeps; perf's count of the
        switch-ins the tracepoint fired bounds it from below (less a firing
        the tool's program reports missed: another BPF program running on
        that CPU). When the tracepoint fired every switch-in, both are the
        same number (see schedwitness)."""
        self.assertGreaterEqual(sw.pcount, SLEEPS + 1, sw)
        missed = run.missed()
        self.assertTrue(sw.ins - missed <= n <= sw.pcount, (n, missed, sw, run))
        if sw.unfired == 0 and missed == 0:
            self.assertEqual(n, sw.pcount, (sw, run))

    def test_counts_wakeups(self):
        with Work("sleep", 5, SLEEPS) as w:
            run, sw = run_witnessed(["runqlat", "-p", str(w.pid)], w)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing run queue latency... Hit Ctrl-C to end.")
        self.assert_latencies(count(run), sw, run)

    def test_per_process_and_milliseconds(self):
        with Work("sleep", 5, SLEEPS) as w:
            run, sw = run_witnessed(["runqlat", "-P", "-m", "-p", str(w.pid)], w)
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        self.assertEqual(list(hists), [("msecs", "pid = %d, comm = cpu_work" % w.pid)], run)
        self.assert_latencies(total(list(hists.values())[0]), sw, run)

    def test_spinners_on_one_cpu_wait(self):
        # Two spinners on CPU 0 take turns: each waits about a slice (a few
        # ms) each time the other runs.
        with Work("spin", 600, cpu=0) as a, Work("spin", 600, cpu=0) as b:
            def work():
                a.go()
                b.go()
                a.wait_done()
                b.wait_done()
            run = run_tool(["runqlat", "-P"], work)
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        for w in (a, b):
            h = hists.get(("usecs", "pid = %d, comm = cpu_work" % w.pid))
            self.assertIsNotNone(h, run)
            self.assertGreaterEqual(total(h, low=512), 10, (w.pid, h))

    def test_intervals_json(self):
        with Work("sleep", 5, 400) as w:
            w.go()
            run = run_tool(["-f", "json", "runqlat", "-p", str(w.pid), "1", "2"], settle=3)
        self.assertEqual(run.rc, 0, run)
        hists = run.json("hist")
        # Two intervals, then the tool exits by itself (nothing more at exit).
        self.assertEqual(len(hists), 2, run)
        for h in hists:
            buckets = h["data"]["@usecs"]
            n = sum(b["count"] for b in buckets)
            # 5 ms sleeps: about 190 a second (fewer when the CPUs are busy).
            self.assertTrue(50 <= n <= 260, (n, h))
            # A latency tool: the estimated percentiles are in the message.
            self.assertEqual(list(h["percentiles"]["@usecs"]), ["p50", "p90", "p99", "p99.9"], h)

    def test_timestamp(self):
        run = run_tool(["runqlat", "-T", "1", "1"], settle=1.5)
        self.assertEqual(run.rc, 0, run)
        self.assertRegex(run.lines[2], r"^\d\d:\d\d:\d\d$", run)
        self.assertIn(("usecs", ""), text_hists(run.lines))

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/runqlat"):
            self.skipTest("libbpf-tools not installed")
        with Work("sleep", 5, SLEEPS) as w:
            twin = start_twin(["/usr/sbin/runqlat", "-p", str(w.pid)], "Tracing")
            try:
                run, sw = run_witnessed(["runqlat", "-p", str(w.pid)], w)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours, their_n = count(run), count(theirs)
        self.assert_latencies(ours, sw, run)
        # The twin (started first, stopped last) counts the same switch-ins;
        # its own count may miss a wakeup or two on a loaded machine (a
        # tracepoint program interrupted by another BPF program is skipped,
        # and libbpf-tools do not report it).
        self.assertLessEqual(their_n, sw.pcount, theirs)
        self.assertGreaterEqual(their_n, sw.ins - 2, (sw, theirs))


class RunqlenTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_spinners_queue_on_their_cpu(self):
        with Work("spin", 800, cpu=0) as a, Work("spin", 800, cpu=0) as b:
            def work():
                a.go()
                b.go()
                a.wait_done()
                b.wait_done()
            p = start_tool(["runqlen", "-C", "-O", "-f", "199"])
            try:
                work()
            finally:
                p.stop()
            run = p.finish()
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Sampling run queue length... Hit Ctrl-C to end.")
        occ = {}
        for line in run.lines:
            if line.startswith("runqocc, CPU "):
                cpu, pct = line[len("runqocc, CPU "):].split()
                occ[int(cpu)] = float(pct.rstrip("%"))
        # CPU 0 always has one spinner waiting while the other runs.
        self.assertGreater(occ.get(0, 0), 80, run)

    def test_linear_histogram_text(self):
        # libbpf-tools' print_linear_hist: a "runqlen" header, then one row per
        # non-empty length (buckets of 1); with -C a "cpu = N" line before
        # each CPU's. Two spinners on CPU 0: one always waits there; one on
        # CPU 1, which an idle machine would not sample at all.
        with Work("spin", 1600, cpu=0) as a, Work("spin", 1600, cpu=0) as b, Work("spin", 1600, cpu=1) as c:
            p = start_tool(["runqlen", "-C", "1", "1"])
            a.go()
            b.go()
            c.go()
            run = p.finish()
            a.wait_done()
            b.wait_done()
            c.wait_done()
        self.assertEqual(run.rc, 0, run)
        i = run.lines.index("cpu = 0")
        self.assertEqual(run.lines[i + 1], "     runqlen       : count     distribution", run)
        rows = {}
        for line in run.lines[i + 2:]:
            m = re.match(r"^        (\d+) {2,}: (\d+) +\|[* ]{40}\|$", line)
            if not m:
                break
            rows[int(m.group(1))] = int(m.group(2))
        self.assertTrue(rows, run)
        self.assertNotIn(0, [c for c in rows.values()], run)  # empty lengths are left out
        self.assertEqual(sorted(rows), list(rows), run)
        self.assertTrue(80 <= sum(rows.values()) <= 120, run)
        self.assertGreaterEqual(sum(c for n, c in rows.items() if n >= 1), sum(rows.values()) - 5, run)
        self.assertIn("cpu = 1", run.lines, run)

    def test_histogram_json(self):
        with Work("spin", 1600, cpu=0) as a, Work("spin", 1600, cpu=0) as b:
            p = start_tool(["-f", "json", "runqlen", "-C", "1", "1"])
            a.go()
            b.go()
            run = p.finish()
            a.wait_done()
            b.wait_done()
        self.assertEqual(run.rc, 0, run)
        hists = json_hists(run)
        # One interval (the tool exits by itself): about 99 samples on CPU 0,
        # nearly all with a spinner waiting.
        cpu0 = hists[("@runqlen", "{.cpu=0}")]
        self.assertTrue(80 <= sum(c for _, _, c in cpu0) <= 120, (cpu0, run))
        self.assertLessEqual(sum(c for lo, _, c in cpu0 if lo == 0), 5, cpu0)


if __name__ == "__main__":
    unittest.main()
