"""A witness of what the kernel's sched:sched_switch tracepoint fired, for
the scheduler tools' tests.

Now and then (about 1 run in 10 of a test with 40 sleeps) the kernel puts a
sleeping thread back on a CPU without firing sched_switch for that
switch-in: the thread's schedstat pcount and voluntary_ctxt_switches count
it, but no tracer sees it (bpfscope, an ftrace instance, bpftrace, perf). A
tool that pairs a switch-out with the next switch-in then lacks one period,
and a test has to know whether that happened to keep its count exact.

SwitchIns(pid) runs `perf stat` system-wide beside the tool over the same
window and counts the tracepoint's firings with next_pid == pid (the
switch-ins the kernel fired for that thread), and with prev_pid == pid
(its switch-outs). It also reads the thread's own counter of switch-ins,
the third field of /proc/PID/task/PID/schedstat (pcount), over the same
window: `unfired` = pcount's delta - switch-ins is the number of switch-ins
the tracepoint did not fire. A process whose work has more threads than its
main one (a waker thread made during the work) is named by `comm`: each
thread inherits the name, so the firings with next_comm/prev_comm == comm
count all of them (give the process a name of its own, cpuwork.Work's
`comm`).

What the witness proves, and what not: measured on this machine, the
tracepoint's switch-outs of the thread always fired (outs == pcount), but
its switch-ins not always: mostly all, about 1 run in 10 one fewer, and on a
machine loaded by other work (a C++ build, other tests' tracers) sometimes
most of them fewer (0, 9, 21 of 41) -- an ftrace instance with the same
filter, run beside perf, counted the very same numbers each time; and once a
bpfscope tp_btf program counted all 41 switch-ins for which perf and the
instance counted 0. So a tool's count of switch-ins lies in [ins - the
firings it reports missed, pcount]: exact when ins == pcount (unfired 0),
and never above the kernel's own count.

No BPF program runs for a firing while a thread of PID 1 (the VM's agent)
is the current task, and the kernel counts none of them (docs/accuracy.md):
a switch-in from such a thread, or a wakeup made by one or in an interrupt
over one. The witness counts those firings for the process too (`blind`)
and leaves them out of `ins`, `main_ins` (and so counts them in `unfired`):
a tool's count is checked against what a BPF program can see.

Only valid beside tools that attach sched_switch as a raw tracepoint
(rawtracepoint:, tp_btf): a BPF program on the classic tracepoint that
returns 0 makes the kernel drop the perf event of that firing.

The window opens and closes by conditions, not by time: perf starts with its
events disabled; "enable"/"disable" go to its control fifo and it answers
"ack" once the events are on/off on every CPU; and both ends wait until
every thread of the process is blocked off a CPU (its wchan names where it
sleeps: the kernel gives one only for a task off its run queue), so that no
switch-in of it can fall between the tool's window and the witness's.
"""
import os
import signal
import subprocess
import tempfile
import time

PERF = os.environ.get("PERF", "perf")


def tids(pid):
    try:
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    except FileNotFoundError:
        return []


def pcount(pid, tid=None):
    """The kernel's count of the times thread `tid` (default: the main one)
    was put on a CPU: the third field of its schedstat."""
    with open("/proc/%d/task/%d/schedstat" % (pid, tid or pid)) as f:
        return int(f.read().split()[2])


def cpu_ns(pid):
    """The CPU time of all live threads of `pid`, in ns (the first field of
    each thread's schedstat)."""
    n = 0
    for t in tids(pid):
        try:
            with open("/proc/%d/task/%d/schedstat" % (pid, t)) as f:
                n += int(f.read().split()[0])
        except FileNotFoundError:
            pass
    return n


def blocked(pid):
    """Whether every thread of `pid` is blocked and off its run queue: the
    kernel names a wchan only for such a task."""
    for t in tids(pid):
        try:
            with open("/proc/%d/task/%d/wchan" % (pid, t)) as f:
                if f.read().strip() in ("", "0"):
                    return False
        except FileNotFoundError:
            pass
    return True


def wait_blocked(pid, limit=60):
    """Until every thread of `pid` is blocked off a CPU (a condition; the
    limit is only against a hang)."""
    end = time.time() + limit
    while not blocked(pid):
        if time.time() > end:
            raise AssertionError("process %d not blocked after %d s" % (pid, limit))
        time.sleep(0.001)


class SwitchIns:
    """with SwitchIns(pid) as sw: ... -- afterwards sw.ins (switch-ins the
    tracepoint fired where a BPF program runs), sw.outs (switch-outs),
    sw.pcount (the kernel's count of switch-ins of the main thread),
    sw.unfired (pcount - main_ins) and sw.blind (the firings no program
    sees, counted out of ins)."""

    def __init__(self, pid, comm=None):
        self.pid, self.comm = pid, comm
        self.ins = self.outs = self.pcount = self.unfired = None
        self.main_ins = None

    def _ack(self):
        # perf 6.1 writes "ack\n" and the string's NUL.
        buf = b""
        while b"ack\n" not in buf:
            b = os.read(self.ack, 64)
            if not b:
                raise AssertionError("perf closed its ack fifo: %s" % self._stderr())
            buf += b

    def _ctl(self, cmd):
        os.write(self.ctl, cmd.encode() + b"\n")
        self._ack()

    def _stderr(self):
        try:
            return self.proc.communicate(timeout=30)[1]
        except Exception:
            return "?"

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="schedwitness-")
        ctl, ack = os.path.join(self.dir, "ctl"), os.path.join(self.dir, "ack")
        os.mkfifo(ctl)
        os.mkfifo(ack)
        ins = "next_comm == \"%s\"" % self.comm if self.comm else "next_pid == %d" % self.pid
        woken = "comm == \"%s\"" % self.comm if self.comm else "pid == %d" % self.pid
        agent = " || ".join("common_pid == %d" % t for t in tids(1))
        events = [("sched_switch", ins),
                  ("sched_switch", "prev_comm == \"%s\"" % self.comm if self.comm else "prev_pid == %d" % self.pid),
                  ("sched_switch", "next_pid == %d" % self.pid), ("sched_switch", "prev_pid == %d" % self.pid),
                  ("sched_switch", "%s && (%s)" % (ins, agent)), ("sched_wakeup", "%s && (%s)" % (woken, agent)),
                  ("sched_switch", "next_pid == %d && (%s)" % (self.pid, agent)),
                  ("sched_wakeup", "pid == %d && (%s)" % (self.pid, agent))]
        argv = [PERF, "stat", "--control=fifo:%s,%s" % (ctl, ack), "-D", "-1", "-x,", "-a"]
        for event, f in events:
            argv += ["-e", "sched:" + event, "--filter", f]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        # Opening a fifo blocks until perf opens the other end.
        self.ctl = os.open(ctl, os.O_WRONLY)
        self.ack = os.open(ack, os.O_RDONLY)
        wait_blocked(self.pid)
        self.pcount0 = pcount(self.pid)
        self._ctl("enable")
        return self

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                wait_blocked(self.pid)
                self._ctl("disable")
                self.pcount = pcount(self.pid) - self.pcount0
        finally:
            self.proc.send_signal(signal.SIGINT)
            err = self._stderr()
            os.close(self.ctl)
            os.close(self.ack)
            for f in os.listdir(self.dir):
                os.unlink(os.path.join(self.dir, f))
            os.rmdir(self.dir)
        if exc[0] is not None:
            return
        counts = [l.split(",")[0] for l in err.splitlines() if ",sched:sched_" in l]
        if len(counts) != 8 or not all(c.isdigit() for c in counts):
            raise AssertionError("perf stat: %s" % err)
        counts = [int(c) for c in counts]
        self.ins, self.outs, self.main_ins, self.main_outs = counts[:4]
        # Firings no BPF program sees (docs/accuracy.md): switch-ins from,
        # and wakeups by, a thread of PID 1 (the VM's agent), or in an
        # interrupt taken while it runs.
        # They count as switch-ins the tools cannot see: `ins` and
        # `main_ins` are the ones they can, and `unfired` includes these.
        self.blind = counts[4] + counts[5]
        self.main_blind = counts[6] + counts[7]
        self.ins -= self.blind
        self.main_ins -= self.main_blind
        self.unfired = self.pcount - self.main_ins
        if os.environ.get("SCHEDWITNESS_LOG"):  # to keep the numbers a run saw
            with open(os.environ["SCHEDWITNESS_LOG"], "a") as f:
                f.write("%r\n" % self)
        # The window opens and closes with the main thread blocked: it went
        # off a CPU as many times as it came on, and the tracepoint has
        # always fired for the switch-outs. Fewer mean that something
        # suppressed perf's count (a classic-tracepoint BPF program).
        if self.main_outs != self.pcount:
            raise AssertionError("witness invalid: %d switch-outs fired, schedstat pcount %d" %
                                 (self.main_outs, self.pcount))

    def unfired_all(self):
        """Switch-ins the tracepoint did not fire, of all threads named
        `comm`: the switch-outs less the switch-ins (each thread is blocked,
        or not yet made, when the window opens, and blocked or ended when it
        closes: it went off a CPU as many times as it came on)."""
        return self.outs - self.ins

    def __repr__(self):
        return "SwitchIns(pid=%d%s: ins=%s outs=%s main_ins=%s pcount=%s unfired=%s blind=%s)" % (
            self.pid, ", comm=%s" % self.comm if self.comm else "", self.ins, self.outs, self.main_ins,
            self.pcount, self.unfired, self.blind)


def run_witnessed(args, work, comm=None):
    """Runs tool `args` (toolrun.run_tool) around work.run() (a cpuwork.Work
    started paused), with a SwitchIns witness of the work's process over the
    work: the tool is attached before the witness opens and stops after it
    closed, and the process is blocked at both ends. Returns (run, witness)."""
    from toolrun import run_tool
    sw = SwitchIns(work.pid, comm)

    def traffic():
        with sw:
            work.run()
    return run_tool(args, traffic), sw
