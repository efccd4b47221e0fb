#!/usr/bin/env python3
"""bpfscope vs bpftrace benchmarks (driven by bench/run.sh).

usage: bench.py BPFSCOPE BPFTRACE TMPDIR [--quick] [--tools-only | --disk-cpu-only]
TMPDIR must hold the compiled helpers getppid_loop, progstats, maxrss, ready
and tcpstorm. Every comparison runs the tools in the same run, in interleaved
rounds. Sections 4 and 5 compare packaged tools (bpfscope tcplife/tcpstates)
with libbpf-tools' twins (env LIBBPF_TOOLS, default /usr/sbin), and are skipped
if those are missing; section 6 compares biolatency and runqlat the same way.
--tools-only runs sections 4 to 6 alone, --disk-cpu-only section 6 alone.
"""
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import time

from waiting import wait_file

BPFSCOPE, BPFTRACE, TMP = sys.argv[1], sys.argv[2], sys.argv[3]
QUICK = "--quick" in sys.argv[4:]
TOOLS_ONLY = "--tools-only" in sys.argv[4:]
DISK_CPU_ONLY = "--disk-cpu-only" in sys.argv[4:]
LIBBPF_TOOLS = os.environ.get("LIBBPF_TOOLS", "/usr/sbin")
READY = os.path.join(TMP, "ready")
TCPSTORM = os.path.join(TMP, "tcpstorm")
PINGPONG = os.path.join(TMP, "pingpong")
HERE = os.path.dirname(os.path.abspath(__file__))
# tests/runtime/scripts/tcplife.bt in bpftrace 0.17's dialect
BPFTRACE_TCPLIFE = os.path.join(HERE, "tcplife-bpftrace017.bt")
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
R_READY = 2 if QUICK else 9     # + one warm-up round, not counted
R_STORM = 1 if QUICK else 5
N_STORM = 2_000 if QUICK else 10_000
# tcplife's silent path: sessions opened and held (tcplife's maps hold 4096
# sockets in bpfscope, 10240 in libbpf-tools; each session is 2 sockets)
N_HOLD = 500 if QUICK else 1_500
# Section 6: direct 4 KiB writes to a loop device (biolatency), pipe round
# trips between two processes on one CPU (runqlat)
N_IO = 5_000 if QUICK else 20_000
N_TRIPS = 20_000 if QUICK else 100_000

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
    if not TOOLS_ONLY and not DISK_CPU_ONLY:
        main_classic(kern)
    if not DISK_CPU_ONLY:
        main_tools(kern)
    main_per_op()


def main_classic(kern):

    # 1. startup
    log(f"[1/5] startup: {R_STARTUP} interleaved rounds")
    st = {}
    for r in range(R_STARTUP):
        for pname, prog in STARTUP_PROGS:
            if prog is PROG_BTF and r >= R_STARTUP_BTF:
                continue
            for tool in ("bpfscope", "bpftrace"):
                st.setdefault((pname, tool), []).append(run_startup(tool, prog))

    # 2. per-event
    log(f"[2/5] per-event cost: {R_EVENT} rounds of {N_EVENT} getppid calls")
    pe = {}
    for r in range(R_EVENT):
        per_event_round(pe)
    log("      kernel accounting (kernel.bpf_stats_enabled=1 for one round)")
    acct = kernel_accounting()

    # 3. printf
    log(f"[3/5] printf to -o FILE: {R_PRINTF} rounds of {N_PRINTF} events")
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


# ------------------------------------------------ packaged tools vs twins
def tool_configs():
    """(tool, impl, argv, header, marker) of every startup configuration that
    can run here. 'ready' = the marker line has been read after the header."""
    cfgs = []
    have = {t: os.access(os.path.join(LIBBPF_TOOLS, t), os.X_OK)
            for t in ("tcplife", "tcpstates")}
    # The disk and CPU tools: libbpf-tools' biolatency and runqlat print a
    # header once attached; its biosnoop does not load here (fentry) and its
    # offcputime prints nothing until its summary, so those two are timed
    # for bpfscope alone.
    twins = {"tcplife": True, "tcpstates": True, "biolatency": True, "runqlat": True,
             "biosnoop": False, "offcputime": False}
    headers = (("tcplife", "PID"), ("tcpstates", "SKADDR"), ("biolatency", "Tracing block device I/O"),
               ("biosnoop", "TIME(s)"), ("offcputime", "Tracing off-CPU time"),
               ("runqlat", "Tracing run queue latency"))
    for tool, header in headers:
        cfgs.append((tool, "bpfscope", [BPFSCOPE, tool], header, NOTIFY))
        if twins[tool] and os.access(os.path.join(LIBBPF_TOOLS, tool), os.X_OK):
            cfgs.append((tool, "libbpf-tools", [os.path.join(LIBBPF_TOOLS, tool)],
                         header, header))
        if tool == "tcplife":
            # bpftrace 0.17 runs BEGIN (the header) after attaching everything
            cfgs.append((tool, "bpftrace", [BPFTRACE, BPFTRACE_TCPLIFE], header, header))
    return cfgs, have


def run_ready(impl, argv, header, marker):
    """(ready_s, total_s, maxrss_kib, status) of one start of a tool under
    the ready launcher (stdout on a pty; SIGINT once ready)."""
    out = os.path.join(TMP, "ready.out")
    p = subprocess.run([READY, "-H", header, "-m", marker, out, *argv],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env_for(impl))
    with open(out) as f:
        ready, total, rss, status = f.read().split()
    if p.returncode != 0 or float(ready) < 0:
        log(f"  warning: {impl} {argv[-1]} never got ready (status {status})")
        return None
    return float(ready), float(total), int(rss), int(status)


def owned_progs(pid):
    """{prog_id: attached?} of the BPF programs whose fds process pid holds
    (from /proc/PID/fdinfo; a link's fdinfo also names its prog_id)."""
    progs = {}
    d = f"/proc/{pid}/fdinfo"
    try:
        names = os.listdir(d)
    except OSError:
        return progs
    for n in names:
        try:
            with open(os.path.join(d, n)) as f:
                text = f.read()
        except OSError:
            continue
        m = re.search(r"^prog_id:\s*(\d+)", text, re.M)
        if m:
            pid_ = int(m.group(1))
            progs[pid_] = progs.get(pid_, False) or "link_type:" in text
    return progs


def prog_stats_full():
    """{id: (type, run_cnt, run_time_ns, name, xlated, jited, verified)}"""
    res = {}
    out = subprocess.run([PROGSTATS], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8:
            res[int(f[0])] = (int(f[1]), int(f[2]), int(f[3]), f[4],
                              int(f[5]), int(f[6]), int(f[7]))
    return res


def storm(n):
    out = subprocess.run([TCPSTORM, str(n)], check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip())


def hold_storm(n, snapshot):
    """Open n sessions and keep them; call snapshot() while they are held
    (before any closes); return (ns per session, snapshot's result)."""
    p = subprocess.Popen([TCPSTORM, str(n), "hold"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        ns = float(p.stdout.readline().strip())
        res = snapshot()
    finally:
        p.stdin.write("\n")
        p.stdin.close()
        p.wait()
    return ns, res


def traced_run(argv, env, outfile, marker, work):
    """Starts a tracer, waits for its ready marker in outfile, runs
    work(snapshot) -> (result, stats after) with bpf_stats on (snapshot() reads
    the stats), stops it with SIGINT. Returns (result, ran, others, text, err):
    ran = {prog id: (name, runs, ns, xlated, jited, verified)} of its programs
    that ran during the work, others = {name: runs} of programs not its own."""
    errf = open(outfile + ".err", "w+b")
    with open(outfile, "wb") as outf:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=outf,
                             stderr=errf, env=env)
    p.errf = errf
    p.stdout = None
    try:
        if not wait_file(outfile, marker, 20, p):
            raise RuntimeError(f"{argv} did not get ready")
        mine = owned_progs(p.pid)
        before = prog_stats_full()
        result, after = work(prog_stats_full)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        errf.seek(0)
        err = errf.read().decode(errors="replace")
        errf.close()
        os.unlink(outfile + ".err")
    ran = {}
    for i, attached in mine.items():
        if i in before and i in after:
            dc = after[i][1] - before[i][1]
            dt = after[i][2] - before[i][2]
            if dc > 0:
                ran[i] = (after[i][3], dc, dt, after[i][4], after[i][5], after[i][6])
    others = {after[i][3]: after[i][1] - before[i][1] for i in after
              if i in before and i not in mine and after[i][1] > before[i][1]}
    with open(outfile, errors="replace") as f:
        text = f.read()
    os.unlink(outfile)
    # wait until this tool's programs are gone (bpfscope releases its links in
    # a background child after exit) so that the next tool runs alone
    deadline = time.time() + 10
    while time.time() < deadline and set(mine) & set(prog_stats_full()):
        time.sleep(0.02)
    return result, ran, others, text, err


def storm_run(tool, impl, mode="cycle"):
    """One tool alone under one storm, bpf_stats on. Returns a dict.
    mode cycle: N_STORM sessions opened and closed; hold: N_HOLD sessions
    opened, stats read before they are closed."""
    n = N_STORM if mode == "cycle" else N_HOLD
    outfile = os.path.join(TMP, f"storm-{impl}-{tool}.out")
    if impl.startswith("bpfscope"):
        argv, marker = [BPFSCOPE, tool], NOTIFY
        env = env_for("bpfscope")
        if impl == "bpfscope-rb16M":  # tools' default ring buffer is 256 KiB
            env["BPFTRACE_PERF_RB_PAGES"] = "4096"
    else:  # line-buffered, so that the header shows when it is ready
        argv = ["stdbuf", "-oL", os.path.join(LIBBPF_TOOLS, tool)]
        marker = "PID" if tool == "tcplife" else "SKADDR"
        env = env_for(impl)
    if mode == "cycle":
        work = lambda snap: (storm(n), snap())
    else:
        work = lambda snap: hold_storm(n, snap)
    ns_cycle, ran, others, text, err = traced_run(argv, env, outfile, marker, work)
    lines = sum(1 for l in text.splitlines() if "127.0.0.1" in l)
    lost = max(lost_in(err), lost_in(text))
    lost += sum(int(x) for x in re.findall(r"[Ll]ost (\d+) events? on CPU", err))
    cnt = sum(v[1] for v in ran.values())
    ns = sum(v[2] for v in ran.values())
    return {"n": n, "ns_run": ns / cnt if cnt else None, "runs": cnt, "ns": ns,
            "progs": ran, "cycle_ns": ns_cycle, "lines": lines, "lost": lost,
            "others": others}


def print_others(results, when):
    """The BPF programs not the measured tool's that ran in its rounds."""
    others = {}
    for xs in results.values():
        for x in xs:
            for k, v in x["others"].items():
                others[k] = others.get(k, 0) + v
    if others:
        print(f"   other BPF programs that ran {when} (other tracers on the machine): "
              + ", ".join(f"{k} ({v} runs)" for k, v in sorted(others.items())))


class LoopDevice:
    """A loop device on a 128 MiB file in TMP (room for N_IO 4 KiB writes), removed on exit."""
    def __enter__(self):
        self.file = os.path.join(TMP, "bio.img")
        with open(self.file, "wb") as f:
            f.truncate(128 << 20)
        self.dev = subprocess.run(["losetup", "-f", "--show", self.file], check=True,
                                  capture_output=True, text=True).stdout.strip()
        return self

    def __exit__(self, *exc):
        subprocess.run(["losetup", "-d", self.dev], check=False)
        os.unlink(self.file)


def direct_writes(dev, n):
    """n direct 4 KiB writes to dev, one at a time; mean ns per write."""
    t = time.monotonic_ns()
    subprocess.run(["dd", "if=/dev/zero", f"of={dev}", "bs=4k", f"count={n}", "oflag=direct",
                    "status=none"], check=True)
    return (time.monotonic_ns() - t) / n


def pingpong(n):
    out = subprocess.run([PINGPONG, str(n)], check=True, capture_output=True, text=True).stdout
    return float(out.strip())


# Section 6: (tool, its ready header, the work, the work's unit, how many units)
def per_op_configs(dev):
    return (("biolatency", "Tracing block device I/O", lambda: direct_writes(dev, N_IO), "I/O", N_IO),
            ("runqlat", "Tracing run queue latency", lambda: pingpong(N_TRIPS), "round trip", N_TRIPS))


def per_op_run(tool, impl, header, work, n):
    """One tool alone under its work, bpf_stats on: BPF ns per unit of work
    (all its programs together) and per program run."""
    if impl == "bpfscope":
        argv, marker, env = [BPFSCOPE, tool], NOTIFY, env_for("bpfscope")
    else:
        argv, marker, env = ["stdbuf", "-oL", os.path.join(LIBBPF_TOOLS, tool)], header, env_for(impl)
    outfile = os.path.join(TMP, f"op-{impl}-{tool}.out")
    wall, ran, others, _, _ = traced_run(argv, env, outfile, marker, lambda snap: (work(), snap()))
    runs = sum(v[1] for v in ran.values())
    ns = sum(v[2] for v in ran.values())
    return {"ns_op": ns / n, "ns_run": ns / runs if runs else None, "runs_op": runs / n, "wall": wall,
            "progs": ran, "others": others}


def main_per_op():
    """6. BPF time per I/O (biolatency) and per pipe round trip (runqlat)."""
    impls = ["bpfscope"] + [i for i in ("libbpf-tools",) if all(
        os.access(os.path.join(LIBBPF_TOOLS, t), os.X_OK) for t in ("biolatency", "runqlat"))]
    try:
        with open(STATS_SYSCTL) as f:
            old = f.read().strip()
    except OSError:
        print("6. kernel accounting unavailable (no kernel.bpf_stats_enabled)")
        return
    log(f"[6] disk and CPU tools, kernel-accounted BPF time per event: {R_STORM} rounds of "
        f"{N_IO} direct writes / {N_TRIPS} pipe round trips, one tool at a time")
    res, base = {}, {}
    with LoopDevice() as loop:
        cfgs = per_op_configs(loop.dev)
        try:
            with open(STATS_SYSCTL, "w") as f:
                f.write("1")
            for r in range(R_STORM):
                for tool, header, work, unit, n in cfgs:
                    base.setdefault(tool, []).append(work())
                    for impl in (impls if r % 2 == 0 else impls[::-1]):
                        res.setdefault((tool, impl), []).append(per_op_run(tool, impl, header, work, n))
        finally:
            with open(STATS_SYSCTL, "w") as f:
                f.write(old)
    print()
    print(f"6. Disk and CPU tools: kernel-accounted BPF time per event (all of a tool's programs), "
          f"{R_STORM} rounds, one tool at a time")
    print(f"   biolatency: {N_IO} direct 4 KiB writes to a loop device; runqlat: {N_TRIPS} pipe round "
          f"trips between two processes on CPU 0")
    print(f"{'tool':<11}{'impl':<14}{'ns/event med':>13}{'min':>8}{'ns/run':>8}{'runs/event':>11}"
          f"{'us/event':>9}  programs (name xlated-insns jited-bytes)")
    for tool, header, work, unit, n in per_op_configs(""):
        print(f"{tool:<11}{'untraced':<14}{'':>13}{'':>8}{'':>8}{'':>11}{med(base[tool]) / 1e3:>9.1f}  (per {unit})")
        for impl in impls:
            xs = res.get((tool, impl), [])
            if not xs:
                continue
            v = [x["ns_op"] for x in xs]
            runs = [x["ns_run"] for x in xs if x["ns_run"]]
            progs = {p[0]: f"{p[0]} {p[3]} {p[4]}" for x in xs for p in x["progs"].values()}
            print(f"{tool:<11}{impl:<14}{med(v):>13.1f}{min(v):>8.1f}{med(runs) if runs else 0:>8.1f}"
                  f"{med([x['runs_op'] for x in xs]):>11.2f}{med([x['wall'] for x in xs]) / 1e3:>9.1f}"
                  f"  {'; '.join(progs.values())}")
        a, b = res.get((tool, "bpfscope")), res.get((tool, "libbpf-tools"))
        if a and b:
            print(f"  {tool:<10} bpfscope / libbpf-tools per event: median "
                  f"{fmt_ratio(med([x['ns_op'] for x in a]), med([x['ns_op'] for x in b]))}, min "
                  f"{fmt_ratio(min(x['ns_op'] for x in a), min(x['ns_op'] for x in b))}  (target <= 1.0)")
    print_others(res, "meanwhile")
    sys.stdout.flush()


def main_tools(kern):
    cfgs, have = tool_configs()
    if not any(have.values()):
        log(f"[4/5] [5/5] skipped: no libbpf-tools tcplife/tcpstates in {LIBBPF_TOOLS}")
        print(f"4./5. packaged tools: skipped (no libbpf-tools in {LIBBPF_TOOLS})")
        return
    # 4. time to ready and peak RSS
    log(f"[4/5] tools, time to ready + peak RSS: 1 warm-up + {R_READY} interleaved rounds")
    rd = {}
    for r in range(R_READY + 1):
        for tool, impl, argv, header, marker in cfgs:
            x = run_ready(impl, argv, header, marker)
            if r > 0 and x is not None:
                rd.setdefault((tool, impl), []).append(x)

    # 5. BPF time per event under a loopback connection storm
    storm_cfgs = [(t, i, "cycle") for t in ("tcplife", "tcpstates") if have[t]
                  for i in ("bpfscope", "libbpf-tools")]
    if have["tcpstates"]:  # the same with a ring buffer that loses nothing here
        storm_cfgs.append(("tcpstates", "bpfscope-rb16M", "cycle"))
    if have["tcplife"]:
        storm_cfgs += [("tcplife", i, "hold") for i in ("bpfscope", "libbpf-tools")]
    log(f"[5/5] tools, kernel-accounted BPF time per event: {R_STORM} rounds of "
        f"{N_STORM} loopback TCP sessions (and {N_HOLD} held), one tool at a time")
    sm = {}
    base = []
    try:
        with open(STATS_SYSCTL) as f:
            old = f.read().strip()
    except OSError:
        old = None
    if old is not None:
        try:
            with open(STATS_SYSCTL, "w") as f:
                f.write("1")
            for r in range(R_STORM):
                base.append(storm(N_STORM))
                order = storm_cfgs if r % 2 == 0 else storm_cfgs[::-1]
                for tool, impl, mode in order:
                    sm.setdefault((tool, impl, mode), []).append(storm_run(tool, impl, mode))
        finally:
            with open(STATS_SYSCTL, "w") as f:
                f.write(old)

    # ---- report
    print()
    print(f"4. Packaged tools: time to ready (exec -> header printed and probes attached) "
          f"and peak RSS; {R_READY} rounds after a warm-up, median [min]")
    print(f"{'tool':<11}{'impl':<14}{'ready ms':>18}{'exit ms':>18}{'peak RSS MiB':>16}")
    for tool, impl, *_ in cfgs:
        xs = rd.get((tool, impl))
        if not xs:
            print(f"{tool:<11}{impl:<14}{'failed':>18}")
            continue
        r_ = [x[0] * 1e3 for x in xs]
        t_ = [x[1] * 1e3 for x in xs]
        m_ = [x[2] / 1024 for x in xs]
        print(f"{tool:<11}{impl:<14}{f'{med(r_):.1f} [{min(r_):.1f}]':>18}"
              f"{f'{med(t_):.1f} [{min(t_):.1f}]':>18}{f'{med(m_):.2f} [{min(m_):.2f}]':>16}")
    print("ratios (bpfscope / other; target: ready <= 0.5 x libbpf-tools, RSS <= 10 MB = 9.54 MiB)")
    for tool, impl, *_ in cfgs:
        if impl == "bpfscope":
            continue
        a, b = rd.get((tool, "bpfscope")), rd.get((tool, impl))
        if not a or not b:
            continue
        print(f"  {tool:<10} vs {impl:<13} ready: median {fmt_ratio(med([x[0] for x in a]), med([x[0] for x in b]))}"
              f", min {fmt_ratio(min(x[0] for x in a), min(x[0] for x in b))}"
              f";  peak RSS: median {fmt_ratio(med([x[2] for x in a]), med([x[2] for x in b]))}")
    print("   ready ms of every round, in order:")
    for tool, impl, *_ in cfgs:
        xs = rd.get((tool, impl))
        if xs:
            print(f"     {tool:<10} {impl:<13} " + " ".join(f"{x[0] * 1e3:.1f}" for x in xs))
    print("   (exit ms = exec to the tool's exit after SIGINT at ready; bpfscope's link release")
    print("    runs in a background child after that; stdout on a pty, as in a terminal)")
    print()

    if old is None:
        print("5. kernel accounting unavailable (no kernel.bpf_stats_enabled)")
        return
    print(f"5. Kernel-accounted BPF time per event (run_time_ns / run_cnt, bpf_stats on), "
          f"{R_STORM} rounds, one tool at a time (tcpstorm, loopback in its own netns)")
    print(f"   cycle: {N_STORM} sessions opened and closed (10 events each; tcplife prints 2 "
          f"lines, tcpstates 10); untraced {med(base) / 1e3:.1f} [{min(base) / 1e3:.1f}] us/session")
    print(f"   hold:  {N_HOLD} sessions opened and kept (4 events each, none prints: "
          f"tcplife's silent path)")
    print(f"{'tool':<11}{'impl':<16}{'storm':<7}{'ns/run med':>11}{'min':>8}{'runs/sess':>10}"
          f"{'us/sess':>9}{'lines/sess':>11}{'lost':>7}  programs (name xlated-insns jited-bytes)")
    for tool, impl, mode in storm_cfgs:
        xs = sm.get((tool, impl, mode), [])
        vals = [x["ns_run"] for x in xs if x["ns_run"]]
        if not vals:
            print(f"{tool:<11}{impl:<16}{mode:<7}{'n/a':>11}")
            continue
        progs = {}
        for x in xs:
            for v in x["progs"].values():
                progs[v[0]] = f"{v[0]} {v[3]} {v[4]}"
        # (hold: the lines come when the sessions close, after the stats are read)
        lines = f"{med([x['lines'] / x['n'] for x in xs]):.2f}" if mode == "cycle" else "-"
        print(f"{tool:<11}{impl:<16}{mode:<7}{med(vals):>11.1f}{min(vals):>8.1f}"
              f"{med([x['runs'] / x['n'] for x in xs]):>10.2f}"
              f"{med([x['cycle_ns'] for x in xs]) / 1e3:>9.1f}"
              f"{lines:>11}"
              f"{max(x['lost'] for x in xs):>7}  {'; '.join(progs.values())}")
    for tool, impl, mode in storm_cfgs:
        if not impl.startswith("bpfscope"):
            continue
        a, b = sm.get((tool, impl, mode)), sm.get((tool, "libbpf-tools", mode))
        if not a or not b:
            continue
        av = [x["ns_run"] for x in a if x["ns_run"]]
        bv = [x["ns_run"] for x in b if x["ns_run"]]
        if av and bv:
            print(f"  {tool:<10} {mode:<6} {impl} / libbpf-tools: median {fmt_ratio(med(av), med(bv))}, "
                  f"min {fmt_ratio(min(av), min(bv))}  (target <= 1.0)")
    print("   (lost = what the tool reported lost, worst round: bpfscope counts ring-buffer records,")
    print("    one per printf statement, 3 per tcpstates line; libbpf-tools count events. A lost")
    print("    record skips the output's copy and wake-up, so it lowers that tool's figure. bpfscope-rb16M = bpfscope")
    print("    with BPFTRACE_PERF_RB_PAGES=4096 instead of the tools' 256 KiB ring buffer)")
    print_others(sm, "during the storms")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
