"""syscount on a process that makes a known number of system calls
(tests/runtime/helpers/cpu_work.c `calls N`: N getppid() and N close(-1),
which fail with EBADF): the counts are exact, -x and -e (a number or a name)
keep the failures, -c keeps a cgroup's processes,
and libbpf-tools' syscount counts the same."""
import os
import re
import subprocess
import unittest

from cpuwork import Work
from toolrun import BPFSCOPE, mount_tracefs, run_tool, start_tool, start_twin

N = 3000


def table(lines, first="SYSCALL"):
    """{key: [columns]} of the rows after the last header that starts with `first`."""
    rows, cur = {}, None
    for line in lines:
        if line.startswith(first):
            cur = {}
            rows = cur
        elif cur is not None and line.strip() and not line.startswith("["):
            cols = line.split()
            if first == "SYSCALL":
                cur[cols[0]] = cols[1:]
            else:
                cur[(int(cols[0]), cols[1])] = cols[2:]
    return rows


class SyscountTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_counts(self):
        with Work("calls", N) as w:
            run = run_tool(["syscount", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing syscalls, printing top 10... Ctrl+C to quit.")
        self.assertRegex(run.lines[1], r"^\[\d\d:\d\d:\d\d\]$")
        self.assertEqual(run.lines[2], "SYSCALL                   COUNT")
        rows = table(run.lines)
        self.assertEqual(rows["getppid"], [str(N)], run)
        self.assertEqual(rows["close"], [str(N)], run)
        # Busiest first, columns as libbpf-tools prints them.
        self.assertIn(run.lines[3].split()[0], ("getppid", "close"))
        self.assertRegex(run.lines[3], r"^\S+ {2,}\d+$")
        self.assertEqual(len(run.lines[3]), 31, run.lines[3])

    def test_failures_and_errno(self):
        for args in (["-x"], ["-e", "9"], ["--errno", "9"], ["-e", "EBADF"], ["--errno=EBADF"]):
            with self.subTest(args=args), Work("calls", N) as w:
                run = run_tool(["syscount", "-p", str(w.pid)] + args, w.run)
                self.assertEqual(run.rc, 0, run)
                self.assertEqual(table(run.lines), {"close": [str(N)]}, run)
        with Work("calls", N) as w:
            run = run_tool(["syscount", "-p", str(w.pid), "-e", "2"], w.run)
        self.assertEqual(table(run.lines), {}, run)

    def test_errno_by_name_and_bad_values(self):
        # A name libbpf-tools accepts; ENOENT is a name too, and none fail so.
        with Work("calls", N) as w:
            run = run_tool(["syscount", "-p", str(w.pid), "-e", "ENOENT"], w.run)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(table(run.lines), {}, run)
        for bad in ("EFOO", "0", "ebadf"):
            p = subprocess.run([BPFSCOPE, "syscount", "-e", bad], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, p)
            self.assertEqual(p.stderr.splitlines()[0],
                             'syscount: -e: invalid errno "%s" (a positive number, or a name such as EPERM)' % bad, p)
            self.assertTrue(p.stderr.splitlines()[1].startswith("USAGE: syscount"), p)

    def test_cgroup(self):
        # Only the processes of a cgroup v2 directory the test makes (and
        # removes): the worker's N getppid() calls, without -p.
        cg = "/sys/fs/cgroup/unified/bpfscope-syscount-%d" % os.getpid()
        os.mkdir(cg)
        try:
            with Work("calls", N) as w:
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(w.pid))
                run = run_tool(["syscount", "-c", cg], w.run)
                with open("/sys/fs/cgroup/unified/cgroup.procs", "w") as f:
                    f.write(str(w.pid))
        finally:
            os.rmdir(cg)
        self.assertEqual(run.rc, 0, run)
        rows = table(run.lines)
        self.assertEqual(rows["getppid"], [str(N)], run)
        self.assertEqual(rows["close"], [str(N)], run)

    def test_latency_process_and_top(self):
        with Work("calls", N) as w:
            run = run_tool(["syscount", "-p", str(w.pid), "-L", "-P"], w.run)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[2], "PID    COMM               COUNT        TIME (us)")
        rows = table(run.lines, "PID")
        count, us = rows[(w.pid, "cpu_work")]
        # 2N calls, and the few of startup and stdin/stdout around them.
        self.assertTrue(2 * N <= int(count) <= 2 * N + 20, run)
        self.assertRegex(us, r"^\d+\.\d{3}$")
        self.assertGreater(float(us), 0)
        with Work("calls", N) as w:
            run = run_tool(["syscount", "-p", str(w.pid), "-L", "-m", "-T", "1"], w.run)
        self.assertEqual(run.lines[2], "SYSCALL                   COUNT        TIME (ms)")
        self.assertEqual(len(table(run.lines)), 1, run)

    def test_interval_and_duration(self):
        # -d 2 ends the run by itself: no signal is sent (the wait's limit is
        # far above any machine's need).
        p = start_tool(["syscount", "-i", "1", "-d", "2"])
        try:
            p.proc.wait(timeout=120)
        finally:
            p.stop()
        run = p.finish()
        self.assertEqual(run.rc, 0, run)
        stamps = [l for l in run.lines if re.match(r"^\[\d\d:\d\d:\d\d\]$", l)]
        self.assertEqual(len(stamps), 2, run)

    def test_json(self):
        with Work("calls", N) as w:
            run = run_tool(["-f", "json", "syscount", "-p", str(w.pid), "-L"], w.run)
        self.assertEqual(run.rc, 0, run)
        tables = run.json("table")
        self.assertEqual(len(tables), 1, run)
        rows = {r["syscall"]: r for r in tables[0]["data"]}
        self.assertEqual(rows["getppid"]["count"], N)
        self.assertIsInstance(rows["getppid"]["time (us)"], float)

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/syscount"):
            self.skipTest("libbpf-tools not installed")
        with Work("calls", N) as w:
            twin = start_twin(["/usr/sbin/syscount", "-p", str(w.pid)], "Tracing")
            try:
                run = run_tool(["syscount", "-p", str(w.pid)], w.run)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours, their = table(run.lines), table(theirs.lines)
        for name in ("getppid", "close"):
            self.assertEqual(ours[name], their[name], (run, theirs))


if __name__ == "__main__":
    unittest.main()
