#!/usr/bin/env python3
"""Event throughput: printf events delivered to -o FILE, bpfscope against
bpftrace in the same run (BENCHMARKS.md, "Event throughput").

usage: bench/throughput.py [--rounds N] BPFSCOPE [BPFTRACE]   (root)

Cases: 1,000,000 getppid calls from one loop on CPU 0, and 2 x 1,000,000 from
two loops at once, one on each of CPUs 0 and 1. The program is
  tracepoint:syscalls:sys_enter_getppid /comm == "getppid_loop"/ { printf("%d\\n", pid); }
written with -o FILE. For each run it counts the lines that arrived (a digit
line per event; every event must arrive) and the lost events the tool reports
(must be zero), and the loops' own ns per call, against the same loops
untraced. Rounds interleave the tools and the untraced loops.
"""
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from waiting import wait_file

N = 1_000_000
NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
PROG = ('tracepoint:syscalls:sys_enter_getppid /comm == "getppid_loop"/ '
        '{ printf("%d\\n", pid); }')
LOST_RE = re.compile(r"Lost (\d+) events")
TOTAL_RE = re.compile(r"Total lost event count: (\d+)")
HERE = os.path.dirname(os.path.abspath(__file__))


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def lost_in(text):
    t = TOTAL_RE.findall(text)
    if t:
        return sum(int(x) for x in t)
    return sum(int(x) for x in LOST_RE.findall(text))


def loops(loop_bin, cpus):
    """Run one getppid_loop per CPU in CPUS at once; their ns per call."""
    ps = [subprocess.Popen([loop_bin, str(N)], stdout=subprocess.PIPE, text=True,
                           preexec_fn=(lambda c=c: os.sched_setaffinity(0, {c})))
          for c in cpus]
    return [float(p.communicate()[0].strip()) for p in ps]


def traced(tool, binary, loop_bin, cpus, tmp):
    out = os.path.join(tmp, f"{tool}.out")
    if os.path.exists(out):
        os.unlink(out)
    argv = [binary, "-q"] if tool == "bpfscope" else [binary]
    env = dict(os.environ)
    if tool == "bpfscope":
        env[NOTIFY] = "1"
    with open(os.path.join(tmp, f"{tool}.err"), "w+") as err:
        p = subprocess.Popen([*argv, "-o", out, "-e", PROG], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=err, env=env, text=True)
        if not wait_file(out, NOTIFY if tool == "bpfscope" else "Attaching", 30, p):
            p.kill()
            raise RuntimeError(f"{tool} did not attach")
        if tool == "bpftrace":
            time.sleep(1.0)  # 0.17 prints "Attaching" before it attaches
        ns = loops(loop_bin, cpus)
        # Let the tracer drain what is queued: wait until the file stops
        # growing for half a second (bpftrace stops reading at SIGINT).
        size, still = -1, time.time()
        deadline = still + 60
        while time.time() - still < 0.5 and time.time() < deadline:
            time.sleep(0.1)
            s = os.path.getsize(out)
            if s != size:
                size, still = s, time.time()
        with open(f"/proc/{p.pid}/stat") as f:  # the tracer's CPU time so far
            st = f.read().rsplit(")", 1)[1].split()
        cpu = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
        p.send_signal(signal.SIGINT)
        try:
            stdout, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, _ = p.communicate()
        err.seek(0)
        stderr = err.read()
    with open(out, errors="replace") as f:
        text = f.read()
    os.unlink(out)
    lines = sum(1 for l in text.splitlines() if l.isdigit())
    lost = lost_in(text) + lost_in(stdout or "") + lost_in(stderr)
    return {"ns": ns, "lines": lines, "lost": lost, "cpu": cpu}


def main():
    args = sys.argv[1:]
    rounds = 3
    if args[:1] == ["--rounds"]:
        rounds, args = int(args[1]), args[2:]
    if not args:
        sys.exit(__doc__)
    tools = {"bpfscope": args[0], "bpftrace": args[1] if len(args) > 1 else "/usr/bin/bpftrace"}
    if os.cpu_count() < 2:
        sys.exit("needs 2 CPUs")
    with tempfile.TemporaryDirectory(prefix="bpfscope-throughput.") as tmp:
        # The loop must be called getppid_loop: the program filters on comm.
        loop_bin = os.path.join(tmp, "getppid_loop")
        subprocess.run(["cc", "-O2", "-o", loop_bin, os.path.join(HERE, "getppid_loop.c")],
                       check=True)
        cases = (("1 x 1M, CPU 0", (0,)), ("2 x 1M, CPUs 0 and 1", (0, 1)))
        res = {}
        for r in range(rounds):
            for cname, cpus in cases:
                res.setdefault((cname, "untraced"), []).append(
                    {"ns": loops(loop_bin, cpus), "lines": None, "lost": 0})
                for tool, binary in tools.items():
                    x = traced(tool, binary, loop_bin, cpus, tmp)
                    res.setdefault((cname, tool), []).append(x)
                    log(f"round {r + 1} {cname} {tool}: {x['lines']} lines, {x['lost']} lost, "
                        f"{' '.join(f'{v:.0f}' for v in x['ns'])} ns/call, tracer {x['cpu']:.2f} s CPU")
        print(f"printf(\"%d\\n\", pid) to -o FILE, {rounds} rounds, "
              f"{os.uname().release}, load {os.getloadavg()[0]:.1f}")
        print(f"{'case':<22}{'tool':<10}{'ns/call (median)':>18}{'added ns':>10}"
              f"{'lines (min of rounds)':>23}{'lost (max)':>12}{'tracer CPU s':>14}")
        for cname, cpus in cases:
            want = N * len(cpus)
            base = statistics.median(v for x in res[(cname, "untraced")] for v in x["ns"])
            print(f"{cname:<22}{'untraced':<10}{base:>18.1f}")
            med = {}
            for tool in tools:
                rs = res[(cname, tool)]
                m = statistics.median(v for x in rs for v in x["ns"])
                med[tool] = m
                lines = min(x["lines"] for x in rs)
                ok = "" if lines == want else f" of {want}!"
                cpu = statistics.median(x["cpu"] for x in rs)
                print(f"{'':<22}{tool:<10}{m:>18.1f}{m - base:>10.1f}"
                      f"{lines:>23}{ok}{max(x['lost'] for x in rs):>12}{cpu:>14.2f}")
            a, b = med["bpfscope"] - base, med["bpftrace"] - base
            print(f"{'':<22}bpfscope / bpftrace: per call {med['bpfscope'] / med['bpftrace']:.2f}, "
                  f"added {a / b:.2f}" if b > 0 else "")


if __name__ == "__main__":
    main()
