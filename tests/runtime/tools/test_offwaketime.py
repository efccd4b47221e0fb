"""wakeuptime and offwaketime on a pipe reader woken by a waker thread
(tests/runtime/helpers/cpu_work.c `pipe MS N`: the waker naps MS ms in
cpu_waker_nap(), then writes the pipe in cpu_wake(); the reader waits in
cpu_pipe_wait()): the reader's blocked time is joined with the waker's stack,
and adds up to about N times MS."""
import os
import re
import unittest

from cpuwork import Work
from schedwitness import run_witnessed
from toolrun import mount_tracefs, run_tool, start_twin

MS, N = 15, 12


def offwake_blocks(lines):
    """[(waker, waker_frames, target_frames, target, tid, us)]."""
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^    waker:\s+(.*)$", lines[i])
        if not m:
            i += 1
            continue
        waker, wf, tf, cur = m.group(1), [], [], None
        cur = wf
        i += 1
        while i < len(lines):
            line = lines[i]
            t = re.match(r"^    target:\s+(.*) (\d+)$", line)
            if t:
                out.append((waker, wf, tf, t.group(1), int(t.group(2)), int(lines[i + 1].strip())))
                i += 2
                break
            if re.match(r"^    --\s+--$", line):
                cur = tf
            else:
                cur.append(line.strip())
            i += 1
    return out


class OffwaketimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_reader_joined_with_its_waker(self):
        with Work("pipe", MS, N) as w:
            run, sw = run_witnessed(["-k", "offwaketime", "-p", str(w.pid)], w)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing blocked time (us) by off-CPU and waker stack... Hit Ctrl-C to end.")
        blocks = offwake_blocks(run.lines)
        reader = [b for b in blocks if "cpu_pipe_wait" in b[2]]
        self.assertTrue(reader, run)
        for waker, wf, tf, target, tid, us in reader:
            self.assertEqual((waker, target, tid), ("cpu_work", "cpu_work", w.pid))
            # The waker's stack: the pipe write in cpu_wake(), on its thread,
            # or (once in CI) its kernel frames alone, where the run (-k)
            # says the kernel could not take its user stack.
            if "cpu_wake" not in wf:
                self.assertIn("WARNING: Failed to get_stackid", run.stderr, run)
                self.assertIn("@wu[$p->pid] = ustack(bcc);", run.stderr, run)
                self.assertEqual(wf[-1], "entry_SYSCALL_64_after_hwframe", wf)
            else:
                self.assertIn("waker_main", wf)
            self.assertTrue({"anon_pipe_write", "pipe_write"} & set(wf), wf)
            # The reader's: blocked in the pipe read, in cpu_pipe_wait() under main().
            self.assertTrue({"anon_pipe_read", "pipe_read"} & set(tf), tf)
            self.assertEqual(tf[tf.index("cpu_pipe_wait") + 1], "main", tf)
        total = sum(b[5] for b in reader)
        # N waits of about MS ms each (a little less: the waker's nap starts
        # at its write, the reader's wait a little later), each joined at
        # the reader's switch-in: less those the tracepoint did not fire
        # (the witness, schedwitness: none in most runs) or the tool
        # reports missed.
        missed = run.missed()
        self.assertGreaterEqual(sw.pcount, N + 1, sw)
        self.assertTrue((N - sw.unfired - missed) * MS * 1000 * 0.9 <= total <= N * (MS + 20) * 1000,
                        (total, missed, sw, run))

    def test_user_stacks_only_json(self):
        # -k: a stack the kernel could not take is reported (a helper_error
        # message), not only left empty.
        with Work("pipe", MS, N) as w:
            run = run_tool(["-k", "-f", "json", "offwaketime", "-U", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        events = [e["data"] for e in run.json("event")]
        stack_failures = [m for m in run.json("helper_error") if m["helper"] == "get_stackid"]
        reader = [e for e in events if "    cpu_pipe_wait\n" in e["target_stack"]]
        self.assertTrue(reader, events)
        self.assertTrue(any("    cpu_wake\n" in e["waker_stack"] for e in reader), reader)
        for e in reader:
            self.assertEqual(sorted(e), ["target", "target_stack", "tid", "us", "waker", "waker_stack"])
            # Woken by the waker thread: its stack is there, or the run says
            # the kernel could not take it (a soak run once printed one empty).
            if e["waker"] == "cpu_work" and "    cpu_wake\n" not in e["waker_stack"]:
                self.assertEqual(e["waker_stack"], "", e)
                self.assertTrue(stack_failures, run)
            self.assertNotIn("do_syscall_64", e["waker_stack"] + e["target_stack"])


def wakeup_blocks(lines):
    """[(target, waker_frames, waker, us)] of wakeuptime's output (ours: "    target:",
    frames, "    waker:", us; libbpf-tools': the same with tabs and addresses)."""
    blocks, cur = [], None
    it = iter(lines)
    for line in it:
        m = re.match(r"^\s+target:\s+(.*)$", line)
        if m:
            cur = (m.group(1), [])
            continue
        m = re.match(r"^\s+waker:\s+(.*)$", line)
        if m and cur:
            blocks.append((cur[0], cur[1], m.group(1), int(next(it).strip())))
            cur = None
        elif cur:
            cur[1].append(line.split()[-1])
    return blocks


class WakeuptimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_waker_kernel_stack(self):
        with Work("pipe", MS, N) as w:
            run = run_tool(["wakeuptime", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing blocked time (us) by kernel stack... Hit Ctrl-C to end.")
        # "target:", the waker's kernel frames, "waker:", the microseconds.
        blocks = wakeup_blocks(run.lines[1:])
        piped = [b for b in blocks if {"anon_pipe_write", "pipe_write"} & set(b[1]) and b[2] == "cpu_work"]
        self.assertTrue(piped, run)
        # The reader blocks about MS ms before each write wakes it.
        total = sum(b[3] for b in piped)
        self.assertTrue((N - 1) * MS * 1000 * 0.9 <= total <= N * (MS + 20) * 1000, (total, run))

    def test_stack_depth(self):
        # --perf-max-stack-depth 4: the waker's 4 innermost kernel frames
        # (BPF's own two, then the wakeup's), the blocked time all the same.
        with Work("pipe", MS, N) as w:
            run = run_tool(["wakeuptime", "-p", str(w.pid), "--perf-max-stack-depth", "4"], w.run)
        self.assertEqual(run.rc, 0, run)
        blocks = [b for b in wakeup_blocks(run.lines[1:]) if b[2] == "cpu_work"]
        self.assertTrue(blocks, run)
        for b in blocks:
            self.assertLessEqual(len(b[1]), 4, run)
        total = sum(b[3] for b in blocks)
        self.assertTrue((N - 1) * MS * 1000 * 0.9 <= total <= N * (MS + 20) * 1000, (total, run))

    def test_json(self):
        with Work("pipe", MS, N) as w:
            run = run_tool(["-f", "json", "wakeuptime", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        events = [e["data"] for e in run.json("event")]
        piped = [e for e in events if "    anon_pipe_write\n" in e["kstack"] or "    pipe_write\n" in e["kstack"]]
        self.assertTrue(piped, events)
        self.assertEqual(sorted(piped[0]), ["kstack", "target", "us", "waker"])

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/wakeuptime"):
            self.skipTest("libbpf-tools not installed")
        with Work("pipe", MS, N) as w:
            twin = start_twin(["/usr/sbin/wakeuptime", "-p", str(w.pid)], "Tracing")
            try:
                run = run_tool(["wakeuptime", "-p", str(w.pid)], w.run)
            finally:
                twin.stop()
            theirs = twin.finish()
        # The blocked time of the process, whoever woke it (libbpf-tools'
        # takes the waker at sched_wakeup, which may run on the wakee's CPU).
        ours = sum(b[3] for b in wakeup_blocks(run.lines[1:]) if b[0] == "cpu_work")
        their = sum(b[3] for b in wakeup_blocks(theirs.lines) if b[0] == "cpu_work")
        self.assertGreater(their, (N - 1) * MS * 1000 * 0.9, theirs)
        self.assertLessEqual(abs(ours - their), 0.05 * their, (ours, their, run, theirs))


if __name__ == "__main__":
    unittest.main()
