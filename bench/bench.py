#!/usr/bin/env python3
"""bpfscope vs bpftrace benchmarks (driven by bench/run.sh).

usage: bench.py BPFSCOPE BPFTRACE TMPDIR [--quick]
TMPDIR must hold the compiled helpers getppid_loop and progstats.
Every comparison runs both tools in the same run, in interleaved rounds.
"""
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import time

BPFSCOPE, BPFTRACE, TMP = sys.argv[1], sys.argv[2], sys.argv[3]
QUICK = "--quick" in sys.argv[4:]
LOOP = os.path.join(TMP, "getppid_loop")
PROGSTATS = os.path.join(TMP, "progstats")
MAXRSS = os.path.join(TMP, "maxrss")
STATS_SYSCTL = "/proc/sys/kernel/bpf_stats_enabled"
NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"

R_STARTUP = 3 if QUICK else 20
R_EVENT = 1 if QUICK else 7
R_PRINTF = 1 if QUICK else 3
N_EVENT = 2_000_000
N_PRINTF = 1_000_000

PROG_BEGIN = "BEGIN { exit(); }"
PROG_TP = ("tracepoint:syscalls:sys_enter_getppid { @[comm] = count(); } "
           "interval:ms:10 { exit(); }")
# BTF-heavy: struct sock casts on inet_sock_set_state (vmlinux BTF is loaded
# and searched at startup by both tools).
PROG_BTF = ("tracepoint:sock:inet_sock_set_state { $sk = (struct sock *)args->skaddr; "
            "$tp = (struct tcp_sock *)$sk; "
            "@[$sk->__sk_common.skc_family, $sk->__sk_common.skc_num, $sk->__sk_common.skc_state] = "
            "sum($tp->bytes_received + $tp->bytes_acked); } "
            "interval:ms:10 { exit(); }")
STARTUP_PROGS = (("BEGIN exit", PROG_BEGIN), ("tp + interval:ms:10", PROG_TP),
                 ("BTF struct sock casts", PROG_BTF))
# bpftrace takes seconds to start the BTF program: fewer rounds of it.
R_STARTUP_BTF = 2 if QUICK else 5
PROG_EMPTY = "tracepoint:syscalls:sys_enter_getppid { }"
PROG_COUNT = "tracepoint:syscalls:sys_enter_getppid { @[comm] = count(); }"
PROG_PRINTF = ('tracepoint:syscalls:sys_enter_getppid /comm == "getppid_loop"/ '
               '{ printf("%d\\n", pid); }')


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def cmd(tool, prog, extra=()):
    if tool == "bpfscope":
        return [BPFSCOPE, "-q", *extra, "-e", prog]
    return [BPFTRACE, *extra, "-e", prog]


def env_for(tool):
    env = dict(os.environ)
    if tool == "bpfscope":
        env[NOTIFY] = "1"
    return env


# ---------------------------------------------------------------- startup
def run_startup(tool, prog):
    """Wall time (s) and peak RSS (KiB) of one whole run. The tool runs under
    the small maxrss launcher: a child forked from python would count python's
    pages in its ru_maxrss."""
    rss_file = os.path.join(TMP, "maxrss.out")
    t0 = time.perf_counter()
    p = subprocess.run([MAXRSS, rss_file, *cmd(tool, prog)], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        log(f"  warning: {tool} exited {p.returncode} on {prog!r}")
    with open(rss_file) as f:
        return wall, int(f.read())


# ------------------------------------------------------ tracer management
def wait_pipe(p, pattern, timeout):
    """Read p.stdout until a line contains pattern; True if it did."""
    deadline = time.time() + timeout
    buf = b""
    fd = p.stdout.fileno()
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            chunk = os.read(fd, 65536)
            if not chunk:
                return False
            buf += chunk
            if pattern.encode() in buf:
                return True
        elif p.poll() is not None:
            return False
    return False


def wait_file(path, pattern, timeout, p):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path, "rb") as f:
                if pattern.encode() in f.read(4096):
                    return True
        except FileNotFoundError:
            pass
        if p.poll() is not None:
            return False
        time.sleep(0.02)
    return False


def start_tracer(tool, prog, outfile=None):
    """Start a tracer in the background and return once it is attached."""
    extra = ["-o", outfile] if outfile else []
    errf = open(os.path.join(TMP, f"{tool}.stderr"), "w+b")
    p = subprocess.Popen(cmd(tool, prog, extra), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=errf, env=env_for(tool))
    p.errf = errf
    pattern = NOTIFY if tool == "bpfscope" else "Attaching"
    if outfile:  # with -o, both tools write the attach line into the file
        ok = wait_file(outfile, pattern, 20, p)
    else:
        ok = wait_pipe(p, pattern, 20)
    if not ok:
        stop_tracer(p)
        raise RuntimeError(f"{tool} did not attach: {prog!r}")
    if tool == "bpftrace":
        time.sleep(1.0)  # 0.17 prints "Attaching" before it attaches
    return p


def stop_tracer(p):
    """SIGINT our own tracer by PID; returns (stdout, stderr) text."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    p.errf.seek(0)
    err = p.errf.read().decode(errors="replace")
    p.errf.close()
    return (out or b"").decode(errors="replace"), err


def loop(n):
    out = subprocess.run([LOOP, str(n)], check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip())


def prog_stats():
    """{id: (type, run_cnt, run_time_ns, name)} of every loaded BPF program."""
    res = {}
    out = subprocess.run([PROGSTATS], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 5:
            res[int(f[0])] = (int(f[1]), int(f[2]), int(f[3]), f[4])
    return res


# ----------------------------------------------------------- per-event
def per_event_round(res):
    res.setdefault("none", []).append(loop(N_EVENT))
    for key, tool, prog in (("bpfscope-empty", "bpfscope", PROG_EMPTY),
                            ("bpfscope-count", "bpfscope", PROG_COUNT),
                            ("bpftrace-count", "bpftrace", PROG_COUNT)):
        p = start_tracer(tool, prog)
        try:
            res.setdefault(key, []).append(loop(N_EVENT))
        finally:
            stop_tracer(p)


def kernel_accounting():
    """run_time_ns / run_cnt of each traced program, bpf_stats on."""
    try:
        with open(STATS_SYSCTL) as f:
            old = f.read().strip()
    except OSError:
        return None
    out = {}
    try:
        with open(STATS_SYSCTL, "w") as f:
            f.write("1")
        for key, tool, prog in (("bpfscope-empty", "bpfscope", PROG_EMPTY),
                                ("bpfscope-count", "bpfscope", PROG_COUNT),
                                ("bpftrace-count", "bpftrace", PROG_COUNT)):
            before = set(prog_stats())
            p = start_tracer(tool, prog)
            try:
                loop(N_EVENT)
                after = prog_stats()
            finally:
                stop_tracer(p)
            new = [v for k, v in after.items() if k not in before and v[1] > 0]
            if not new:
                out[key] = None
                continue
            typ, cnt, ns, name = max(new, key=lambda v: v[1])
            out[key] = (ns / cnt, cnt, name)
    finally:
        with open(STATS_SYSCTL, "w") as f:
            f.write(old)
    return out


# -------------------------------------------------------------- printf
LOST_RE = re.compile(r"Lost (\d+) events")
TOTAL_RE = re.compile(r"Total lost event count: (\d+)")


def lost_in(text):
    t = TOTAL_RE.findall(text)
    if t:
        return sum(int(x) for x in t)
    return sum(int(x) for x in LOST_RE.findall(text))


def printf_run(tool):
    outfile = os.path.join(TMP, f"printf-{tool}.txt")
    if os.path.exists(outfile):
        os.unlink(outfile)
    p = start_tracer(tool, PROG_PRINTF, outfile)
    t0 = time.perf_counter()
    try:
        ns = loop(N_PRINTF)
    finally:
        stop_out, stop_err = stop_tracer(p)
    wall = time.perf_counter() - t0
    with open(outfile, errors="replace") as f:
        text = f.read()
    lines = sum(1 for l in text.splitlines() if l.isdigit())
    lost = lost_in(text) + lost_in(stop_out) + lost_in(stop_err)
    os.unlink(outfile)
    return {"lines": lines, "lost": lost, "loop_ns": ns, "wall": wall}


# -------------------------------------------------------------- report
def med(xs):
    return statistics.median(xs)


def fmt_ratio(a, b):
    return f"{a / b:.3f}" if b else "n/a"


def main():
    kern = os.uname().release
    log(f"bench: {'quick' if QUICK else 'full'} mode, kernel {kern}, "
        f"{os.cpu_count()} CPUs")

    # 1. startup
    log(f"[1/3] startup: {R_STARTUP} interleaved rounds")
    st = {}
    for r in range(R_STARTUP):
        for pname, prog in STARTUP_PROGS:
            if prog is PROG_BTF and r >= R_STARTUP_BTF:
                continue
            for tool in ("bpfscope", "bpftrace"):
                st.setdefault((pname, tool), []).append(run_startup(tool, prog))

    # 2. per-event
    log(f"[2/3] per-event cost: {R_EVENT} rounds of {N_EVENT} getppid calls")
    pe = {}
    for r in range(R_EVENT):
        per_event_round(pe)
    log("      kernel accounting (kernel.bpf_stats_enabled=1 for one round)")
    acct = kernel_accounting()

    # 3. printf
    log(f"[3/3] printf to -o FILE: {R_PRINTF} rounds of {N_PRINTF} events")
    pf = {}
    for r in range(R_PRINTF):
        for tool in ("bpfscope", "bpftrace"):
            pf.setdefault(tool, []).append(printf_run(tool))

    # ---- report
    print()
    print(f"== bpfscope vs bpftrace ({'quick' if QUICK else 'full'}; kernel {kern}; "
          f"{os.cpu_count()} CPUs) ==")
    print()
    print(f"1. Startup (whole process, {R_STARTUP} rounds, the BTF program {R_STARTUP_BTF}; wall s, "
          "peak RSS MiB; median [min])")
    print(f"{'program':<24}{'bpfscope wall':>18}{'bpftrace wall':>18}{'ratio':>8}"
          f"{'bpfscope RSS':>16}{'bpftrace RSS':>16}{'ratio':>8}")
    for pname, _ in STARTUP_PROGS:
        a = st[(pname, "bpfscope")]
        b = st[(pname, "bpftrace")]
        aw, bw = [x[0] for x in a], [x[0] for x in b]
        am, bm = [x[1] / 1024 for x in a], [x[1] / 1024 for x in b]
        print(f"{pname:<24}"
              f"{f'{med(aw):.4f} [{min(aw):.4f}]':>18}"
              f"{f'{med(bw):.4f} [{min(bw):.4f}]':>18}"
              f"{fmt_ratio(med(aw), med(bw)):>8}"
              f"{f'{med(am):.1f} [{min(am):.1f}]':>16}"
              f"{f'{med(bm):.1f} [{min(bm):.1f}]':>16}"
              f"{fmt_ratio(med(am), med(bm)):>8}")
    a = [x[0] for x in st[("tp + interval:ms:10", "bpfscope")]]
    b = [x[0] for x in st[("tp + interval:ms:10", "bpftrace")]]
    print("   (the tracepoint program includes the 10 ms interval for both tools; with 0.01 s")
    print(f"    subtracted from both medians the ratio is {fmt_ratio(med(a) - 0.01, med(b) - 0.01)},")
    print(f"    from both minima {fmt_ratio(min(a) - 0.01, min(b) - 0.01)})")
    print()

    print(f"2. Per-event cost, tracepoint:syscalls:sys_enter_getppid, "
          f"{R_EVENT} rounds x {N_EVENT} calls (ns/call)")
    base_med, base_min = med(pe["none"]), min(pe["none"])
    print(f"{'configuration':<22}{'median':>10}{'min':>10}{'added(med)':>12}{'added(min)':>12}"
          f"{'added(paired)':>15}")
    for key in ("none", "bpfscope-empty", "bpfscope-count", "bpftrace-count"):
        xs = pe[key]
        print(f"{key:<22}{med(xs):>10.1f}{min(xs):>10.1f}"
              f"{med(xs) - base_med:>12.1f}{min(xs) - base_min:>12.1f}"
              f"{med([x - y for x, y in zip(xs, pe['none'])]):>15.1f}")
    a_med = med(pe["bpfscope-count"]) - base_med
    b_med = med(pe["bpftrace-count"]) - base_med
    a_min = min(pe["bpfscope-count"]) - base_min
    b_min = min(pe["bpftrace-count"]) - base_min
    a_pair = med([x - y for x, y in zip(pe["bpfscope-count"], pe["none"])])
    b_pair = med([x - y for x, y in zip(pe["bpftrace-count"], pe["none"])])
    print(f"added-cost ratio bpfscope/bpftrace (count): median {fmt_ratio(a_med, b_med)}, "
          f"min {fmt_ratio(a_min, b_min)}, paired {fmt_ratio(a_pair, b_pair)}")
    print("   (paired = median over rounds of (traced - untraced) within the same round)")
    if acct is None:
        print("kernel accounting: unavailable (no kernel.bpf_stats_enabled)")
    else:
        print("kernel accounting (run_time_ns/run_cnt, one run with bpf_stats on):")
        for key, v in acct.items():
            if v is None:
                print(f"  {key:<20} n/a")
            else:
                print(f"  {key:<20}{v[0]:>8.1f} ns/run  ({v[1]} runs, prog {v[2]})")
        if acct.get("bpfscope-count") and acct.get("bpftrace-count"):
            print(f"  ratio bpfscope/bpftrace (count): "
                  f"{fmt_ratio(acct['bpfscope-count'][0], acct['bpftrace-count'][0])}")
    print()

    print(f"3. printf(\"%d\\n\", pid) to -o FILE, {N_PRINTF} getppid calls, {R_PRINTF} rounds")
    print(f"{'tool':<10}{'written (median)':>18}{'min':>10}{'lost (max)':>12}"
          f"{'written/expected':>18}{'loop ns/call':>14}")
    for tool in ("bpfscope", "bpftrace"):
        rs = pf[tool]
        ls = [r["lines"] for r in rs]
        print(f"{tool:<10}{med(ls):>18.0f}{min(ls):>10}{max(r['lost'] for r in rs):>12}"
              f"{f'{min(ls) / N_PRINTF:.4f} (min)':>18}"
              f"{med([r['loop_ns'] for r in rs]):>14.1f}")
    print()

    print("Summary (bpfscope / bpftrace, medians)")
    for pname, _ in STARTUP_PROGS:
        a = st[(pname, "bpfscope")]
        b = st[(pname, "bpftrace")]
        print(f"  startup wall  {pname:<22} {fmt_ratio(med([x[0] for x in a]), med([x[0] for x in b]))}")
        print(f"  peak RSS      {pname:<22} {fmt_ratio(med([x[1] for x in a]), med([x[1] for x in b]))}")
    print(f"  added ns/event @[comm]=count()       {fmt_ratio(a_med, b_med)}")
    print(f"  printf lines written (bpfscope, bpftrace) "
          f"{min(r['lines'] for r in pf['bpfscope'])}, {min(r['lines'] for r in pf['bpftrace'])}"
          f" of {N_PRINTF} (worst round)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
