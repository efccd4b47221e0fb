"""clear(), zero() and print-then-clear lose no update: while the test's own
getppid() loop runs on one CPU, an interval on the other prints and clears
(or zeroes) the map every millisecond, and the printed values add up to the
calls made, exactly. A probe that looked an entry up just before user space
took it out would otherwise add to an entry already read: before the maps
were swapped, 164 of 1,000,000 calls were lost this way, and 1,950 to
zero() (docs/accuracy.md). With --prometheus, the served counters end at
the calls made too."""
import os
import re
import subprocess
import time
import unittest

from metricsrun import Served, value
from toolrun import BPFSCOPE, run_tool

PID = os.getpid()
N = 200000
PROBE = "tracepoint:syscalls:sys_enter_getppid /pid == %d/" % PID


def calls(n=N):
    for _ in range(n):
        os.getppid()


def printed_total(lines, name):
    """The sum of every `@name: V` and `@name[K]: V` line."""
    pattern = re.compile(r"^@%s(\[.*\])?: (\d+)$" % name)
    return sum(int(m.group(2)) for m in map(pattern.match, lines) if m)


class ClearTest(unittest.TestCase):
    def check_total(self, prog, name, expected=N):
        run = run_tool(["-e", prog], calls, settle=0.3)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(printed_total(run.lines, name), expected, run.stderr)

    def test_print_then_clear(self):
        self.check_total(PROBE + " { @n = count(); } interval:ms:1 { print(@n); clear(@n); }", "n")

    def test_clear_apart_from_print(self):
        # A clear() of its own discards what arrived since the last print:
        # with a clear between any two prints (on the 5th ms the print runs
        # first), no call is printed twice, and the keyed entry comes back
        # after each clear. The calls are spread over 0.4 s, longer than
        # several prints apart (each clear waits a grace period).
        def spread():
            for _ in range(20):
                calls(N // 20)
                time.sleep(0.02)

        run = run_tool(["-e", PROBE + " { @k[1] = count(); } interval:ms:5 { print(@k); } "
                        "interval:ms:1 { clear(@k); }"], spread, settle=0.3)
        self.assertEqual(run.rc, 0, run)
        self.assertLessEqual(printed_total(run.lines, "k"), N)
        self.assertGreater(printed_total(run.lines, "k"), 0)

    def test_print_then_zero(self):
        self.check_total(PROBE + " { @z = sum(3); } interval:ms:1 { print(@z); zero(@z); }", "z", 3 * N)

    def test_keyed_print_then_clear(self):
        self.check_total(PROBE + " { @c[cpu % 2] = count(); } interval:ms:1 { print(@c); clear(@c); }", "c")

    def test_served_counters_end_at_the_work(self):
        prog = PROBE + (" { @p = count(); @z = sum(2); @h = hist(3); } "
                        "interval:ms:1 { print(@p); clear(@p); zero(@z); clear(@h); }")
        with Served(["-e", prog]) as s:
            calls()
            time.sleep(0.3)
            page = s.scrape()
            self.assertEqual(value(page, "bpfscope_p_total"), N)
            self.assertEqual(value(page, "bpfscope_z_total"), 2 * N)
            self.assertEqual(value(page, "bpfscope_h_count"), N)
            run = s.finish()
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(printed_total(run.lines, "p"), N)

    def test_one_wait_per_tick(self):
        # A tick that prints and empties three maps waits for the running
        # programs once, not once per map: strace counts bpfscope's
        # membarrier() calls (one more stops the probes at exit).
        trace = "/tmp/bpfscope-clear-%d.strace" % PID
        loop = os.path.join(os.path.dirname(os.path.abspath(BPFSCOPE)), "syscall_loop")
        prog = ("tracepoint:syscalls:sys_enter_getppid { @c = count(); @k[tid] = count(); @z = sum(1); } "
                "interval:ms:2 { printf(\"tick\\n\"); print(@c); clear(@k); clear(@c); zero(@z); }")
        # LeakSanitizer cannot run under ptrace (the sanitizer build's
        # leaks are checked by every other run).
        env = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"))
        try:
            p = subprocess.run(["strace", "-e", "trace=membarrier", "-o", trace, BPFSCOPE, "-q", "-c",
                                loop + " getppid 1000000", "-e", prog], capture_output=True, text=True, timeout=60,
                               env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            ticks = p.stdout.splitlines().count("tick")
            waits = len([l for l in open(trace) if l.startswith("membarrier(")])
        finally:
            if os.path.exists(trace):
                os.unlink(trace)
        self.assertGreaterEqual(ticks, 3, p.stdout)
        self.assertEqual(waits, ticks + 1, p.stdout)


if __name__ == "__main__":
    unittest.main()
