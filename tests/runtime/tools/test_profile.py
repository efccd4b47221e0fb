"""profile and offcputime on work of known shape (tests/runtime/helpers/
cpu_work.c): profile's stacks of a spinning process name cpu_spin() under
main(); offcputime's name the sleeping function with the time it slept, the
pipe reader and its waker; libbpf-tools' offcputime sums the same time."""
import os
import time
import unittest

from cpuwork import Work
from schedwitness import cpu_ns, run_witnessed
from stacks import stacks, with_frame
from toolrun import Process, mount_tracefs, run_tool


# The kernel's sched_switch tracepoint now and then fires no switch-in for a
# thread woken from a sleep (about 1 run in 10 of the tests below): the
# sleep's off-CPU time is never completed, by any tracer. The witness
# (schedwitness) counts over the same window the switch-ins the tracepoint
# fired and the kernel's own count of them; a sum of sleeps may lack only as
# many sleeps as it shows unfired (and the tool reports missed).
def sleeps_seen(n, sw, run, unfired=None):
    """The sleeps of n whose time the tool must have summed."""
    return n - (sw.unfired if unfired is None else unfired) - run.missed()


class ProfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_stacks_name_the_spinning_function(self):
        with Work("spin", 700) as w:
            run = run_tool(["profile", "-F", "199", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0],
                         "Sampling at 199 Hertz of PID [%d] by user + kernel... Hit Ctrl-C to end." % w.pid)
        parsed = stacks(run.lines)
        spin = with_frame(parsed, "cpu_spin", w.pid)
        self.assertTrue(spin, run)
        for frames, comm, pid, _ in spin:
            self.assertEqual(comm, "cpu_work")
            self.assertEqual(frames[frames.index("cpu_spin") + 1], "main", frames)
        # 700 ms at 199 Hz is 139 samples when the spinner has the CPU to
        # itself; other work on the machine takes some.
        n = sum(s[3] for s in spin)
        self.assertTrue(20 <= n <= 150, (n, run))
        self.assertGreaterEqual(n, 0.8 * sum(s[3] for s in parsed), run)

    def test_user_and_kernel_only(self):
        with Work("spin", 300, "calls", 200000) as w:
            run = run_tool(["profile", "-U", "-p", str(w.pid), "-F", "499"], w.run)
        self.assertEqual(run.rc, 0, run)
        frames = {f for s in stacks(run.lines) for f in s[0]}
        self.assertIn("cpu_spin", frames)
        self.assertFalse({"do_syscall_64", "entry_SYSCALL_64_after_hwframe"} & frames, run)
        with Work("calls", 300000) as w:
            run = run_tool(["profile", "-K", "-p", str(w.pid), "-F", "499"], w.run)
        self.assertEqual(run.rc, 0, run)
        parsed = stacks(run.lines)
        frames = {f for s in parsed for f in s[0]}
        self.assertFalse({"cpu_calls", "main"} & frames, run)
        self.assertIn("do_syscall_64", frames, run)

    def test_duration_and_json(self):
        with Work("spin", 1500) as w:
            w.go()
            cpu0 = cpu_ns(w.pid)
            run = run_tool(["-f", "json", "profile", "-p", str(w.pid), "1"], settle=2.5)
            cpu = cpu_ns(w.pid) - cpu0
            w.wait_done()
        self.assertEqual(run.rc, 0, run)
        events = [e["data"] for e in run.json("event")]
        self.assertTrue(events, run)
        for e in events:
            self.assertEqual(sorted(e), ["comm", "kstack", "pid", "samples", "ustack"])
            self.assertEqual(e["pid"], w.pid)
        spin = [e for e in events if "    cpu_spin\n    main\n" in e["ustack"]]
        # A per-task cpu-clock sample is taken each 1/49 s of the spinner's
        # own CPU time, so the kernel's count of that time (schedstat, read
        # before the tool started and after it ended: a window that holds
        # the tool's second) bounds the samples: at most its time times 49,
        # and 2 more (a period already begun when the tool attached, and
        # rounding); at least one (it spins all through the second, though
        # on a busy machine it may get little of the CPU).
        n = sum(e["samples"] for e in spin)
        self.assertTrue(1 <= n <= cpu * 49 / 1e9 + 2, (n, cpu, events))

    def test_folded(self):
        with Work("spin", 500) as w:
            run = run_tool(["profile", "-f", "-F", "199", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        # Folded lines only on stdout (the header goes to stderr): the
        # process name, then the user frames root first, then kernel frames.
        spin = [l for l in run.lines if ";main;cpu_spin" in l]
        self.assertTrue(spin, run)
        for line in run.lines:
            self.assertRegex(line, r"^cpu_work;\S+ \d+$")
        self.assertIn("Sampling at 199 Hertz", run.stderr)
        self.assertGreaterEqual(sum(int(l.rsplit(" ", 1)[1]) for l in spin), 10, run)

    def test_help_and_bad_options(self):
        import subprocess
        from toolrun import BPFSCOPE
        r = subprocess.run([BPFSCOPE, "profile", "-h"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("-F, --frequency=FREQUENCY", r.stdout)
        r = subprocess.run([BPFSCOPE, "profile", "-U", "-K", "1"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cannot be used together", r.stderr)


class OffcputimeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_sleeper_pipe_reader_and_waker(self):
        # A name of its own: the witness counts the waker thread's switches
        # by it.
        with Work("sleep", 20, 10, "pipe", 15, 10, comm="cw%d" % os.getpid()) as w:
            run, sw = run_witnessed(["offcputime", "-p", str(w.pid)], w, comm=w.comm)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0],
                         "Tracing off-CPU time (us) of PID %d by user + kernel stack... Hit Ctrl-C to end." % w.pid)
        parsed = stacks(run.lines)
        # The sleeps' stack (in do_nanosleep); a busy machine may add others
        # of cpu_sleep, preempted on the way back to user space.
        sleep = [s for s in with_frame(parsed, "cpu_sleep", w.pid) if "do_nanosleep" in s[0]]
        self.assertEqual(len(sleep), 1, run)
        frames, comm, _, us = sleep[0]
        self.assertEqual(comm, w.comm)
        self.assertIn("do_nanosleep", frames)
        self.assertEqual(frames[frames.index("cpu_sleep") + 1], "main", frames)
        # 10 sleeps of 20 ms, each a little longer (timer slack, wakeup, and
        # the wait for a CPU on a busy machine), less those whose switch-in
        # the tracepoint did not fire (see sleeps_seen).
        self.assertGreaterEqual(sw.pcount, 21, sw)
        self.assertTrue(sleeps_seen(10, sw, run) * 20000 <= us <= 10 * 40000, (us, sw, run))
        # The reads' stacks block in the pipe read; any other stack of
        # cpu_pipe_wait is a preemption on the way back to user space.
        reader = with_frame(parsed, "cpu_pipe_wait", w.pid)
        self.assertTrue(any("anon_pipe_read" in s[0] or "pipe_read" in s[0] for s in reader), run)
        for s in reader:
            self.assertTrue({"anon_pipe_read", "pipe_read", "exit_to_user_mode_loop"} & set(s[0]), (s, run))
        reader = [s for s in reader if "anon_pipe_read" in s[0] or "pipe_read" in s[0]]
        # Each read waits out most of the waker's 15 ms nap: the nap starts at
        # the write, the read a little later (the reader has to run first,
        # later on a busy machine).
        self.assertTrue(100000 <= sum(s[3] for s in reader) <= 10 * 35000, run)
        # The waker thread naps 15 ms before each write, less the naps whose
        # switch-in the tracepoint did not fire: the thread is made and ends
        # in the window, so those are its switch-outs less its switch-ins
        # (the process's, by its name, less the main thread's).
        nap = with_frame(parsed, "cpu_waker_nap")
        self.assertTrue(nap, run)
        self.assertNotEqual(nap[0][2], w.pid)
        waker_unfired = sw.unfired_all() - (sw.main_outs - sw.main_ins)
        self.assertGreaterEqual(sw.outs - sw.main_outs, 11, sw)
        self.assertTrue(sleeps_seen(10, sw, run, waker_unfired) * 15000 <= sum(s[3] for s in nap) <= 10 * 35000,
                        (waker_unfired, sw, run))

    def test_stack_depth(self):
        # --perf-max-stack-depth 3: 3 kernel frames (the BPF program's own,
        # bpf_trace_run4, __schedule) and 3 user frames at most.
        with Work("sleep", 20, 10) as w:
            run, sw = run_witnessed(["offcputime", "-p", str(w.pid), "--perf-max-stack-depth", "3"], w)
        self.assertEqual(run.rc, 0, run)
        parsed = stacks(run.lines)
        self.assertTrue(parsed, run)
        for frames, _, _, _ in parsed:
            self.assertLessEqual(len(frames), 6, run)
        self.assertNotIn("do_nanosleep", {f for s in parsed for f in s[0]}, run)
        sleep = with_frame(parsed, "cpu_sleep", w.pid)
        self.assertTrue(sleeps_seen(10, sw, run) * 20000 <= sum(s[3] for s in sleep) <= 10 * 40000, (sw, run))
        import subprocess
        from toolrun import BPFSCOPE
        r = subprocess.run([BPFSCOPE, "offcputime", "--perf-max-stack-depth", "200", "1"], capture_output=True,
                           text=True, timeout=30)
        # Out of the header's range: refused before compiling, as argp does.
        self.assertEqual(r.returncode, 2, r)
        self.assertIn('offcputime: --perf-max-stack-depth: invalid perf-max-stack-depth "200": must be from 1 to 127\n',
                      r.stderr)

    def test_min_block_time_and_json(self):
        with Work("sleep", 5, 20, "sleep", 60, 3) as w:
            run, sw = run_witnessed(["-f", "json", "offcputime", "-p", str(w.pid), "-m", "30000"], w)
        self.assertEqual(run.rc, 0, run)
        events = [e["data"] for e in run.json("event")]
        sleeps = [e for e in events if "    cpu_sleep\n" in e["ustack"]]
        # The 5 ms sleeps are under the minimum: only the three of 60 ms count.
        self.assertEqual(len(sleeps), 1, events)
        self.assertTrue(sleeps_seen(3, sw, run) * 60000 <= sleeps[0]["us"] <= 3 * 90000, (sw, sleeps))
        self.assertEqual(sorted(sleeps[0]), ["comm", "kstack", "tid", "us", "ustack"])

    def test_folded(self):
        with Work("sleep", 20, 10) as w:
            run, sw = run_witnessed(["offcputime", "-f", "-p", str(w.pid)], w)
        self.assertEqual(run.rc, 0, run)
        # The sleeps' stack; a busy machine may add others of cpu_sleep,
        # preempted on the way back to user space (exit_to_user_mode_loop).
        sleep = [l for l in run.lines if ";main;cpu_sleep;" in l and ";do_nanosleep_[k];" in l]
        self.assertEqual(len(sleep), 1, run)
        self.assertRegex(sleep[0], r"^cpu_work;.*;cpu_sleep;.*do_nanosleep_\[k\];.*\d+$")
        us = int(sleep[0].rsplit(" ", 1)[1])
        self.assertTrue(sleeps_seen(10, sw, run) * 20000 <= us <= 10 * 40000, (us, sw, run))

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/offcputime"):
            self.skipTest("libbpf-tools not installed")
        with Work("sleep", 20, 10) as w:
            # libbpf-tools' offcputime prints nothing until its summary: ready
            # once it has loaded (a moment after it started).
            twin = Process(["stdbuf", "-oL", "/usr/sbin/offcputime", "-p", str(w.pid)], lambda ls: True)
            time.sleep(1.5)
            try:
                run = run_tool(["offcputime", "-p", str(w.pid)], w.run)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours = with_frame(stacks(run.lines), "cpu_sleep", w.pid)
        their = with_frame(stacks(theirs.lines), "cpu_sleep", w.pid)
        self.assertEqual(len(ours), 1, run)
        self.assertTrue(their, theirs)
        a, b = ours[0][3], sum(s[3] for s in their)
        self.assertLessEqual(abs(a - b), 0.03 * b, (a, b))


if __name__ == "__main__":
    unittest.main()
