"""cpudist on work of known shape (tests/runtime/helpers/cpu_work.c): a thread
that sleeps 10 ms N times is off CPU N times for about 10 ms (-O), and
between the sleeps on CPU for a few microseconds; two threads spinning on one
CPU run a scheduler slice at a time."""
import os
import unittest

from cpuwork import Work
from histrun import json_hists, text_hists, total
from schedwitness import SwitchIns, run_witnessed
from toolrun import Cgroup, mount_tracefs, run_tool, start_twin

SLEEPS = 30


def only(run, unit="usecs"):
    hists = text_hists(run.lines)
    return sum((b for (u, _), b in hists.items() if u == unit), [])


def assert_offcpu(test, h, sw, run, low=8192):
    """The off-CPU periods of a process whose work was witnessed
    (schedwitness): one per switch-in of the main thread after its first in
    the window ("go" on stdin: its switch-out came before the tool was
    attached), that the tool saw: at most the kernel's count (pcount) less
    that first; at least the switch-ins perf saw the tracepoint fire, less
    that first and the firings the tool reports missed. Exact when the
    tracepoint fired every switch-in (sw.unfired 0). The sleeps (periods of
    `low` and more: each sleep lasts at least its 10 ms) are SLEEPS, less
    those whose switch-in the tracepoint did not fire."""
    n, missed = total(h), run.missed()
    test.assertGreaterEqual(sw.pcount, SLEEPS + 1, sw)
    test.assertTrue(sw.ins - 1 - missed <= n <= sw.pcount - 1, (n, missed, sw, run))
    if sw.unfired == 0 and missed == 0:
        test.assertEqual(n, sw.pcount - 1, (sw, run))
    sleeps = total(h, low=low)
    test.assertTrue(SLEEPS - sw.unfired - missed <= sleeps <= SLEEPS, (sleeps, missed, sw, run))


class CpudistTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_offcpu_sleeps(self):
        with Work("sleep", 10, SLEEPS) as w:
            run, sw = run_witnessed(["cpudist", "-O", "-p", str(w.pid)], w)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing off-CPU time... Hit Ctrl-C to end.")
        h = only(run)
        # Each sleep: 10 ms and the wakeup's delay (8192 -> 16383);
        # preemptions add short periods.
        assert_offcpu(self, h, sw, run)

    def test_cgroup(self):
        # Only the threads of the cgroup (the sleeper, moved into its child),
        # without -p: each sleep is one period off the CPU.
        with Cgroup("cpudist") as cg, Work("sleep", 10, SLEEPS) as w:
            cg.move(w.pid)
            run, sw = run_witnessed(["cpudist", "-O", "-P", "-c", cg.path], w)
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        self.assertEqual(list(hists), [("usecs", "pid = %d, comm = cpu_work" % w.pid)], run)
        h = hists[("usecs", "pid = %d, comm = cpu_work" % w.pid)]
        assert_offcpu(self, h, sw, run)

    def test_oncpu_periods(self):
        # 20 spins of 4 ms, each ending in a 2 ms sleep: at least 20 on-CPU
        # periods, most of about 4 ms (split in shorter ones when preempted).
        steps = []
        for _ in range(20):
            steps += ["spin", 4, "sleep", 2, 1]
        with Work(*steps) as w:
            run, sw = run_witnessed(["cpudist", "-p", str(w.pid), "-P"], w)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing on-CPU time... Hit Ctrl-C to end.")
        h = text_hists(run.lines)[("usecs", "pid = %d, comm = cpu_work" % w.pid)]
        # One on-CPU period per switch-in the tool saw (each ends in the
        # window: the process is blocked when it closes): from perf's count
        # of them (less the firings the tool reports missed) to the kernel's.
        n, missed = total(h), run.missed()
        self.assertGreaterEqual(sw.pcount, 21, sw)
        self.assertTrue(sw.ins - missed <= n <= sw.pcount, (n, missed, sw, run))
        if sw.unfired == 0 and missed == 0:
            self.assertEqual(n, sw.pcount, (sw, run))
        self.assertGreaterEqual(total(h, low=512, high=8192), 10, run)

    def test_milliseconds_json(self):
        with Work("sleep", 10, SLEEPS) as w:
            run, sw = run_witnessed(["-f", "json", "cpudist", "-O", "-m", "-p", str(w.pid)], w)
        self.assertEqual(run.rc, 0, run)
        h = json_hists(run)[("@msecs", "")]
        # 10 ms sleeps: 8 -> 15 ms (and more on a busy machine).
        assert_offcpu(self, h, sw, run, low=8)

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/cpudist"):
            self.skipTest("libbpf-tools not installed")
        # Off-CPU time: both count every period off CPU.
        with Work("sleep", 10, SLEEPS) as w:
            twin = start_twin(["/usr/sbin/cpudist", "-O", "-p", str(w.pid)], "Tracing")
            try:
                run = run_tool(["cpudist", "-O", "-p", str(w.pid)], w.run)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours, their = only(run), only(theirs)
        self.assertGreaterEqual(total(their, low=8192), SLEEPS - 3, theirs)
        self.assertLessEqual(abs(total(ours, low=8192) - total(their, low=8192)), 2, (run, theirs))
        # On-CPU time of two spinners sharing a CPU: every period ends in a
        # preemption, which libbpf-tools' cpudist counts too.
        with Work("spin", 500, cpu=0) as a, Work("spin", 500, cpu=0) as b:
            twin = start_twin(["/usr/sbin/cpudist", "-p", str(a.pid)], "Tracing")
            try:
                def work():
                    a.go()
                    b.go()
                    a.wait_done()
                    b.wait_done()
                run = run_tool(["cpudist", "-p", str(a.pid)], work)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours, their = total(only(run), low=1024), total(only(theirs), low=1024)
        self.assertGreaterEqual(their, 10, theirs)
        self.assertLessEqual(abs(ours - their), max(3, their // 5), (run, theirs))


if __name__ == "__main__":
    unittest.main()
