"""The counting tools, funccount and stackcount, on a test program that calls
work() a known number of times (tests/runtime/helpers/uprobe_target.c), and
their errors where kernel functions cannot be traced."""
import os
import re
import subprocess
import time
import unittest

from toolrun import BPFSCOPE, mount_tracefs, run_tool, start_tool

HELPERS = os.path.dirname(os.path.abspath(BPFSCOPE))
TARGET = os.path.join(HELPERS, "uprobe_target")
WORK = "uprobe:%s:work" % TARGET
N = 37


def call_work(n=N, linger_ms=0):
    """Runs the target: n calls of work(), then it lingers (its maps stay
    readable, for user stacks) while the tool prints."""
    return subprocess.Popen([TARGET, str(n), "x", str(linger_ms)])


class FunccountTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_counts_calls(self):
        run = run_tool(["funccount", WORK], lambda: call_work().wait())
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], 'Tracing "%s"... Hit Ctrl-C to end.' % WORK, run)
        self.assertRegex(run.lines[2], r"^FUNC +COUNT$", run)
        self.assertRegex(run.lines[3], r"^%s +%d$" % (re.escape(WORK), N), run)

    def test_wildcards_json_and_duration(self):
        # Two functions matched by one pattern; -d ends the run by itself.
        p = start_tool(["-f", "json", "funccount", "-d", "2", "uprobe:%s:[wa]*" % TARGET])
        try:
            call_work().wait()
        finally:
            run = p.finish(timeout=10)
        self.assertEqual(run.rc, 0, run)
        tables = run.json("table")
        self.assertEqual(len(tables), 1, run)
        rows = {r["func"]: r["count"] for r in tables[0]["data"]}
        self.assertEqual(rows, {"uprobe:%s:work" % TARGET: N, "uprobe:%s:add" % TARGET: 1}, run)

    def test_intervals(self):
        run = run_tool(["funccount", "-i", "1", WORK], lambda: (call_work().wait(), time.sleep(1.2)))
        self.assertEqual(run.rc, 0, run)
        counts = [int(l.split()[-1]) for l in run.lines if l.startswith(WORK)]
        self.assertEqual(sum(counts), N, run)
        self.assertGreaterEqual(len([l for l in run.lines if l.startswith("FUNC")]), 1, run)

    def test_kernel_functions_say_why_and_where_to_look(self):
        p = subprocess.run([BPFSCOPE, "funccount", "tcp*"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        lines = p.stderr.splitlines()
        # The error names the pattern given, not tools/funccount.bt, and the
        # hint is the command to type instead.
        self.assertRegex(lines[0], r"^funccount: pattern 'tcp\*': Unable to attach probe: kprobe:tcp\*: kprobes are not "
                                   r"available", p)
        self.assertNotIn("tools/funccount.bt", p.stderr, p)
        self.assertEqual(lines[1], "funccount: HINT: try bpfscope funccount 't:tcp:*'", p)
        p = subprocess.run([BPFSCOPE, "funccount", "t:nosuchcategory:*"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1, p)
        self.assertEqual(len(p.stderr.splitlines()), 1, p)
        self.assertEqual(p.stderr, "funccount: pattern 't:nosuchcategory:*': Probe has no valid attach points: t:nosuchcategory:* matches nothing\n",
                         p)


class StackcountTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def counted(self, args):
        target = []
        run = run_tool(["stackcount"] + args + [WORK], lambda: target.append(call_work(linger_ms=3000)), settle=0.5)
        target[0].kill()
        target[0].wait()
        self.assertEqual(run.rc, 0, run)
        return run

    def test_user_stacks(self):
        run = self.counted(["-U"])
        text = "\n".join(run.lines)
        # At a function's entry its caller's frame is not yet linked (the
        # frame pointer is pushed by the function): work, then main's caller.
        m = re.search(r"^@user\[\n\s+work\+0\n(?:\s+\S+\n)*\]: (\d+)$", text, re.M)
        self.assertTrue(m, run)
        self.assertEqual(int(m.group(1)), N, run)

    def test_folded_per_process(self):
        run = self.counted(["-f", "-P"])
        # Folded lines only: comm;pid;user frames root first, kernel frames
        # (marked _[k] beside a user stack: a uprobe has none) above them.
        self.assertEqual(len(run.lines), 1, run)
        self.assertRegex(run.lines[0], r"^uprobe_target;\d+;(\S+;)*work %d$" % N, run)
        self.assertIn('Tracing "%s"' % WORK, run.stderr, run)


if __name__ == "__main__":
    unittest.main()
