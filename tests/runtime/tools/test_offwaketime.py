"""wakeuptime and offwaketime on a pipe reader woken by a waker thread
(tests/runtime/helpers/cpu_work.c `pipe MS N`: the waker naps MS ms in
cpu_waker_nap(), then writes the pipe in cpu_wake(); the reader waits in
cpu_pipe_wait()): the reader's blocked time is joined with the waker's stack,
and adds up to about N times MS."""
import re
import unittest

from cpuwork import Work
from toolrun import mount_tracefs, run_tool

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
            run = run_tool(["offwaketime", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing blocked time (us) by off-CPU and waker stack... Hit Ctrl-C to end.")
        blocks = offwake_blocks(run.lines)
        reader = [b for b in blocks if "cpu_pipe_wait" in b[2]]
        self.assertTrue(reader, run)
        for waker, wf, tf, target, tid, us in reader:
            self.assertEqual((waker, target, tid), ("cpu_work", "cpu_work", w.pid))
            # The waker's stack: the pipe write in cpu_wake(), on its thread.
            self.assertIn("cpu_wake", wf)
            self.assertIn("waker_main", wf)
            self.assertTrue({"anon_pipe_write", "pipe_write"} & set(wf), wf)
            # The reader's: blocked in the pipe read, in cpu_pipe_wait() under main().
            self.assertTrue({"anon_pipe_read", "pipe_read"} & set(tf), tf)
            self.assertEqual(tf[tf.index("cpu_pipe_wait") + 1], "main", tf)
        total = sum(b[5] for b in reader)
        # N waits of about MS ms each (the first starts before the tool).
        self.assertTrue((N - 1) * MS * 1000 * 0.9 <= total <= N * (MS + 8) * 1000, (total, run))

    def test_user_stacks_only_json(self):
        with Work("pipe", MS, N) as w:
            run = run_tool(["-f", "json", "offwaketime", "-U", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        events = [e["data"] for e in run.json("event")]
        reader = [e for e in events if "    cpu_pipe_wait\n" in e["target_stack"]]
        self.assertTrue(reader, events)
        for e in reader:
            self.assertEqual(sorted(e), ["target", "target_stack", "tid", "us", "waker", "waker_stack"])
            self.assertIn("    cpu_wake\n", e["waker_stack"])
            self.assertNotIn("do_syscall_64", e["waker_stack"] + e["target_stack"])


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
        blocks, cur = [], None
        it = iter(run.lines[1:])
        for line in it:
            m = re.match(r"^    target:\s+(.*)$", line)
            if m:
                cur = (m.group(1), [])
                continue
            m = re.match(r"^    waker:\s+(.*)$", line)
            if m and cur:
                blocks.append((cur[0], cur[1], m.group(1), int(next(it).strip())))
                cur = None
            elif cur:
                cur[1].append(line.strip())
        piped = [b for b in blocks if {"anon_pipe_write", "pipe_write"} & set(b[1]) and b[2] == "cpu_work"]
        self.assertTrue(piped, run)
        # The reader blocks about MS ms before each write wakes it.
        total = sum(b[3] for b in piped)
        self.assertTrue((N - 1) * MS * 1000 * 0.9 <= total <= N * (MS + 8) * 1000, (total, run))


if __name__ == "__main__":
    unittest.main()
