"""trace: bcc's probe specifiers (probe, predicate, printf-style message)
spliced into the script. Block I/O errors on a loop device the test fills
(the book's one-liner, as printed), openat(2) of files a child opens, a
uprobe and a uretprobe in a helper that calls work() a known number of times
(tests/runtime/helpers/uprobe_target.c), a USDT probe of another helper
(usdt_target.c), -p, -T, -t, -C, -U/-K stacks, -M, JSON, and errors located
in the specifier."""
import atexit
import errno
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from blockio import LoopDev
from toolrun import BPFSCOPE, TraceInstance, mount_tracefs, run_tool, start_tool

HELPERS = os.path.dirname(os.path.abspath(BPFSCOPE))
# Copies of the uprobe and USDT helpers, which only this test runs: the
# probes are on a file, for every process that runs it, and other tests run
# the helpers of the build at the same time (their events would count
# towards -M and the expected lines). Same names, so the same COMM.
COPIES = tempfile.mkdtemp(prefix="bpfscope-trace-")
atexit.register(shutil.rmtree, COPIES, True)
UPROBE = shutil.copy2(os.path.join(HELPERS, "uprobe_target"), COPIES)
USDT = shutil.copy2(os.path.join(HELPERS, "usdt_target"), COPIES)
HEADER = "PID     TID     COMM            FUNC             -"
# PID TID COMM FUNC MSG, as bcc's "%-7d %-7d %-15s %-16s %s".
LINE = re.compile(r"^(\d+) +(\d+) +(\S+) +(\S+) +(.*)$")


def events(run, func):
    """[(pid, tid, comm, msg)] of the lines whose FUNC is `func`."""
    out = []
    for l in run.lines:
        m = LINE.match(l)
        if m and m.group(4) == func:
            out.append((int(m.group(1)), int(m.group(2)), m.group(3), m.group(5)))
    return out


def opener(path, n, delay=1.0):
    """A child that waits `delay` seconds (the tool attaches), then opens
    `path` n times."""
    code = ("import os, time; time.sleep(%r)\nfor _ in range(%d): os.close(os.open(%r, os.O_RDONLY))"
            % (delay, n, path))
    return subprocess.Popen([sys.executable, "-c", code])


class TraceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_book_one_liner_block_io_errors(self):
        # BPF Performance Tools, ch. 9: the one-liner as printed. The loop
        # device's tmpfs holds 1 MiB: the 20 writes after it fail with ENOSPC.
        one_liner = 't:block:block_rq_complete (args->error) "dev %d type %s error %d", args->dev, args->rwbs, ' \
                    'args->error'
        with LoopDev(mb=8, full_after_kb=1024) as dev:
            maj, mnr = dev.devno()
            devno = (maj << 20) | mnr
            prefix = "dev %d " % devno
            with TraceInstance("block/block_rq_complete", "dev == %d && error != 0" % devno) as w:
                p = start_tool(["trace", one_liner])
                try:
                    failed = dev.failed_io(range(276), bs=4096, write=True)
                    # As bcc's trace, the tool leaves out events whose
                    # current task is its own process: here completions in
                    # a softirq that interrupted it (-S keeps them).
                    fired = w.count(but_pid=p.proc.pid)
                    # Until every line is out (a loaded machine may be slow to print).
                    p.wait_for(lambda ls: sum(1 for l in ls if l and prefix in l) >= fired, 5)
                finally:
                    p.stop()
                run = p.finish()
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], HEADER, run)
        self.assertEqual(len(failed), 20, failed)
        self.assertTrue(all(e == errno.ENOSPC for _, e in failed), failed)
        self.assertGreater(fired, 0)
        mine = [e for e in events(run, "block_rq_complete") if e[3].startswith(prefix)]
        # Each failed request the kernel fired for is a line, or one the run
        # reports missed. The run's count is of every skipped firing of
        # block_rq_complete, on any disk (the root disk's completions while
        # a CI neighbour's BPF program runs on that CPU), not only this one's.
        self.assertLessEqual(len(mine), fired, (fired, run))
        self.assertGreaterEqual(len(mine) + run.missed(), fired, (fired, run))
        for pid, tid, comm, msg in mine:
            self.assertEqual(msg, "dev %d type WS error %d" % (devno, -errno.ENOSPC), run)
        # Only errors pass the predicate.
        self.assertFalse([l for l in run.lines if re.search(r" error 0$", l)], run)

    def test_tracepoint_string_argument_and_pid(self):
        # Two children open the same file, 4 and 3 times; -p keeps the first.
        path = "/tmp/bpfscope-trace-%d" % os.getpid()
        open(path, "w").close()
        try:
            a = opener(path, 4, delay=1.5)
            b = opener(path, 3, delay=1.5)
            try:
                run = run_tool(["trace", "-p", str(a.pid), 't:syscalls:sys_enter_openat "%s", args->filename'],
                               lambda: (a.wait(timeout=15), b.wait(timeout=15)), settle=0)
            finally:
                a.kill()
                b.kill()
        finally:
            os.unlink(path)
        self.assertEqual(run.rc, 0, run)
        opens = events(run, "sys_enter_openat")
        self.assertTrue(opens, run)
        self.assertEqual({(pid, tid) for pid, tid, _, _ in opens}, {(a.pid, a.pid)}, run)
        self.assertEqual([msg for _, _, _, msg in opens if msg == path], [path] * 4, run)

    def test_uprobe_and_uretprobe_with_signature_and_retval(self):
        # work(i) returns 2 * i for i in 0..5; greet(who) gets "uprobe bob".
        child = None

        def uprobe_target():
            nonlocal child
            child = subprocess.Popen([UPROBE, "6", "bob"])
            child.wait(timeout=15)

        run = run_tool(["trace",
                        "r:%s:work (retval >= 4) \"work returned %%d\", retval" % UPROBE,
                        "p:%s:work(int n) (n == 3) \"n=%%d\", n" % UPROBE,
                        "%s:greet \"hello %%s\", arg1" % UPROBE],
                       uprobe_target, settle=0.5)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], HEADER, run)
        # The probes are on the binary, for every process that runs it: the
        # child's events (other tests run uprobe_target at the same time).
        got = [(comm, msg) for pid, _, comm, msg in events(run, "work") + events(run, "greet") if pid == child.pid]
        self.assertEqual(sorted(m for _, m in got),
                         sorted(["work returned 4", "work returned 6", "work returned 8", "work returned 10",
                                 "n=3", "hello uprobe bob"]), run)
        self.assertEqual({comm for comm, _ in got}, {"uprobe_target"}, run)
        # In the order they happened.
        msgs = [m for l in run.lines for m in [LINE.match(l)] if m and m.group(1) == str(child.pid)]
        self.assertEqual([m.group(5) for m in msgs],
                         ["work returned 4", "n=3", "work returned 6", "work returned 8", "work returned 10",
                          "hello uprobe bob"], run)

    def test_max_events_from_two_cpus(self):
        # Two loops of getppid(2) on both CPUs: -M prints exactly that many
        # events, none more (each is counted by one atomic add) and none
        # fewer (the tool exits once all of them have printed).
        loop = os.path.join(HELPERS, "syscall_loop")
        p = start_tool(["trace", "-M", "3000", 't:syscalls:sys_enter_getppid (comm == "syscall_loop")'])
        try:
            procs = [subprocess.Popen(["taskset", "-c", str(c), loop, "getppid", "100000"]) for c in (0, 1)]
            for q in procs:
                q.wait(timeout=30)
        finally:
            run = p.finish(timeout=10)
        self.assertEqual(run.rc, 0, run)
        rows = [l for l in run.lines[1:] if l.strip()]
        self.assertEqual(len(rows), 3000, run.stderr)
        self.assertTrue(all(LINE.match(r) and r.split()[2] == "syscall_loop" for r in rows))

    def test_usdt_max_events_and_time_columns(self):
        # tick(i, total) for i in 0..9: the predicate keeps i >= 2; -M 3 ends
        # the tool by itself after three events.
        p = start_tool(["trace", "-T", "-C", "-M", "3", "u:%s:tick (arg1 >= 2) \"i=%%d total=%%d\", arg1, arg2" % USDT])
        try:
            subprocess.run([USDT, "10", "20"], check=True, stdout=subprocess.DEVNULL, timeout=15)
        finally:
            run = p.finish(timeout=10)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "TIME     CPU " + HEADER, run)
        rows = run.lines[1:]
        self.assertEqual(len(rows), 3, run)
        want = ["i=2 total=3", "i=3 total=6", "i=4 total=10"]
        for row, msg in zip(rows, want):
            self.assertRegex(row, r"^\d\d:\d\d:\d\d \d+ +\d+ +\d+ +usdt_target +tick +%s$" % msg, run)
        # -t: seconds since the start, bcc's 8 characters.
        p = start_tool(["trace", "-t", "-M", "2", "u:%s:bpfscope_test:tick" % USDT])
        try:
            subprocess.run([USDT, "5", "10"], check=True, stdout=subprocess.DEVNULL, timeout=15)
        finally:
            run = p.finish(timeout=10)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "TIME     PID     TID     COMM            FUNC             ", run)
        self.assertEqual(len(run.lines), 3, run)
        for row in run.lines[1:]:
            self.assertRegex(row, r"^\d\.\d{6} \d+ +\d+ +usdt_target +bpfscope_test:tick +$", run)

    def test_name_and_uid_filters(self):
        # -n keeps the processes whose name contains the text: the USDT
        # helper's ticks, not the uprobe helper's work() calls.
        def work():
            subprocess.run([UPROBE, "3"], check=True, timeout=15)
            subprocess.run([USDT, "3"], check=True, stdout=subprocess.DEVNULL, timeout=15)

        run = run_tool(["trace", "-n", "sdt_targ", "--uid", str(os.getuid()),
                        "u:%s:tick \"%%d\", arg1" % USDT, "%s:work \"%%d\", arg1" % UPROBE], work, settle=0.5)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual([(c, m) for _, _, c, m in events(run, "tick")], [("usdt_target", str(i)) for i in range(3)],
                         run)
        self.assertEqual(events(run, "work"), [], run)

    def test_thread_filter(self):
        # -L keeps one thread: a process whose main thread and a second
        # thread each call getppid(2) 4 times; only the second's show.
        code = ("import os, sys, threading\n"
                "go = threading.Event()\n"
                "def calls():\n"
                "    for _ in range(4): os.getppid()\n"
                "t = threading.Thread(target=lambda: (print(threading.get_native_id(), flush=True),"
                " go.wait(), calls()))\n"
                "t.start(); sys.stdin.readline(); go.set(); calls(); t.join()\n")
        child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)
        try:
            tid = int(child.stdout.readline())
            def go():
                child.stdin.write("go\n")
                child.stdin.flush()
                child.wait(timeout=15)

            run = run_tool(["trace", "-L", str(tid), "t:syscalls:sys_enter_getppid"], go, settle=0.5)
        finally:
            child.kill()
            child.wait()
            child.stdin.close()
            child.stdout.close()
        self.assertEqual(run.rc, 0, run)
        got = events(run, "sys_enter_getppid")
        self.assertEqual([(pid, t) for pid, t, _, _ in got], [(child.pid, tid)] * 4, run)

    def test_leaves_out_its_own_events(self):
        # trace's output goes through libc's write() to fd 1 too: as bcc's
        # trace, it leaves out its own events (else each line would trace
        # the next), unless -S, where -M bounds them.
        spec = 'p:c:write (arg1 == 1) "writing %d bytes", arg3'
        p = start_tool(["trace", spec])
        try:
            for _ in range(3):
                subprocess.run(["/bin/echo", "x" * 236], check=True, stdout=subprocess.DEVNULL, timeout=15)
            time.sleep(0.5)
        finally:
            p.stop()
        run = p.finish()
        self.assertEqual(run.rc, 0, run)
        writes = events(run, "write")
        self.assertEqual(len([e for e in writes if e[2] == "echo" and e[3] == "writing 237 bytes"]), 3, run)
        self.assertFalse([e for e in writes if e[0] == p.proc.pid], run)
        p = start_tool(["trace", "-S", "-M", "3", spec])
        try:
            subprocess.run(["/bin/echo", "hello"], check=True, stdout=subprocess.DEVNULL, timeout=15)
        finally:
            run = p.finish(timeout=10)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(len(events(run, "write")), 3, run)
        self.assertTrue([e for e in events(run, "write") if e[0] == p.proc.pid], run)

    def test_stacks(self):
        # -U: the user stack where work() returns to: main, then libc's
        # frames (the caller of a function at its entry, before it saved
        # the frame pointer, is not in a frame-pointer stack).
        run = run_tool(["trace", "-U", "r:%s:work (retval == 2) \"%%d\", retval" % UPROBE],
                       lambda: subprocess.run([UPROBE, "3", "stack", "500"], check=True, timeout=15), settle=0)
        self.assertEqual(run.rc, 0, run)
        i = next(k for k, l in enumerate(run.lines) if l.endswith(" work             2"))
        frames = run.lines[i + 1:run.lines.index("", i)]
        self.assertGreaterEqual(len(frames), 2, run)
        self.assertEqual(frames[0], "    main", run)
        path = "/tmp/bpfscope-trace-k-%d" % os.getpid()
        open(path, "w").close()
        try:
            a = opener(path, 1, delay=1.5)
            run = run_tool(["trace", "-K", "-p", str(a.pid),
                            "t:syscalls:sys_enter_openat (str(args->filename) == \"%s\") \"%%s\", args->filename" % path],
                           lambda: a.wait(timeout=15), settle=0)
        finally:
            os.unlink(path)
        self.assertEqual(run.rc, 0, run)
        i = next(k for k, l in enumerate(run.lines) if l.endswith(" " + path))
        frames = run.lines[i + 1:run.lines.index("", i)]
        self.assertTrue(frames, run)
        self.assertTrue(all(re.match(r"^    \S+$", f) for f in frames), run)
        self.assertTrue(any("syscall" in f for f in frames), run)

    def test_json(self):
        p = start_tool(["-f", "json", "trace", "-U", "-M", "2",
                        "r:%s:work (retval >= 2) \"ret %%d\", retval" % UPROBE])
        try:
            child = subprocess.Popen([UPROBE, "4", "x", "500"])
            child.wait(timeout=15)
        finally:
            run = p.finish(timeout=10)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.json("printf")[0]["data"], HEADER + "\n", run)
        evs = [m["data"] for m in run.json("event")]
        self.assertEqual(len(evs), 2, run)
        for e, ret in zip(evs, [2, 4]):
            self.assertEqual(list(e), ["pid", "tid", "comm", "func", "msg", "ustack"], run)
            self.assertEqual((e["pid"], e["tid"], e["comm"], e["func"], e["msg"]),
                             (child.pid, child.pid, "uprobe_target", "work", "ret %d" % ret), run)
            self.assertIn("main", e["ustack"], run)

    def trace(self, *args):
        return subprocess.run([BPFSCOPE, "trace"] + list(args), capture_output=True, text=True, timeout=30)

    def test_errors_point_into_the_specifier(self):
        spec = 't:block:block_rq_complete (args->errorx) "dev %d", args->dev'
        p = self.trace(spec)
        self.assertEqual(p.returncode, 1, p)
        self.assertEqual(p.stderr.splitlines(), [
            "trace: probe:1:28-40: ERROR: Can't find field 'errorx' in tracepoint block:block_rq_complete",
            spec,
            " " * 27 + "~" * 12], p)
        p = self.trace('t:block:block_rq_complete "dev %d %d", args->dev')
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("trace: probe:1:27-49: ERROR: printf: Not enough arguments for format string "
                      "(1 supplied, 2 expected)", p.stderr, p)
        p = self.trace('c:malloc "%d", retval')
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("trace: probe:1:16-22: ERROR: retval is only known in a return probe (r:)", p.stderr, p)
        p = self.trace('t:sched:sched_switch "%d", arg1')
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("ERROR: arg1: a tracepoint's fields are args->NAME", p.stderr, p)

    def test_bad_specifiers_and_kernel_functions(self):
        for spec, why in [("x:foo:bar", "the probe type must be p, r, t or u"),
                          ('t:block:block_rq_complete "abc', "the format string's '\"' is not closed"),
                          ("t:block:block_rq_complete(args->error)", "USDT and tracepoint probes take no signature"),
                          ("t:block:block_rq_complete (args->error", "the predicate's '(' is not closed"),
                          ("t::block_rq_complete", "a tracepoint is t:CATEGORY:EVENT")]:
            p = self.trace(spec)
            self.assertEqual(p.returncode, 2, p)
            self.assertIn('trace: probe: invalid specifier "%s": %s' % (spec, why), p.stderr, p)
            self.assertIn("USAGE: trace", p.stderr, p)
        p = self.trace()
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("trace: missing argument probe", p.stderr, p)
        # p:: and r:: are kernel functions: kprobes, which this kernel lacks,
        # said as funccount says it, naming the specifier.
        for spec, word, kind in [('p::do_sys_openat2 "%d", arg1', "'p::do_sys_openat2 \"%d\", arg1'", "kprobe"),
                                 ("r::do_sys_openat2", "r::do_sys_openat2", "kretprobe")]:
            p = self.trace("-T", spec)
            self.assertNotEqual(p.returncode, 0, p)
            lines = p.stderr.splitlines()
            self.assertRegex(lines[0], r"^trace: probe %s: Unable to attach probe: %s:do_sys_openat2: kprobes are "
                             r"not available" % (re.escape(word), kind), p)
            self.assertRegex(lines[1], r"^trace: HINT: try bpfscope trace -T t:syscalls:sys_e", p)

    def test_help(self):
        p = self.trace("-h")
        self.assertEqual(p.returncode, 0, p)
        self.assertIn("-M, --max-events=MAX_EVENTS", p.stdout)
        self.assertIn("[{p,r,t,u}]:[library]:function[(signature)]", p.stdout)
        self.assertIn("probe [probe ...]", p.stdout)
        p = subprocess.run([BPFSCOPE, "tools"], capture_output=True, text=True, timeout=120)
        self.assertRegex(p.stdout, r"(?m)^trace +Attach to .* ok$")


if __name__ == "__main__":
    unittest.main()
