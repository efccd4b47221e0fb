#!/usr/bin/env python3
"""Start and memory against ply (BENCHMARKS.md, "Start and memory against ply").

usage: bench/ply.py [--rounds N] [--smaps] BPFSCOPE PLY   (root)

Runs `BEGIN { exit(); }` (ply: `ply 'BEGIN { exit(0); }'`; its -e means
"exit after compiling") N times each (default 20),
the tools in turn, under bench/maxrss.c: wall time and peak RSS of the whole
process, medians and the pairwise median of the ratios bpfscope / ply.
PLY may be the libtool wrapper script of a build tree (src/ply/ply): the real
binary (src/ply/.libs/ply) is run instead, with the wrapper's
LD_LIBRARY_PATH. Measuring the wrapper measures bash: its peak RSS is bash's
~3 MB, not ply's.

--smaps also runs each tool once under strace, stopped at exit_group, and
prints its resident kilobytes by mapping (file and permissions), the
VmHWM/RssAnon/RssFile lines of /proc/PID/status and, for the tool's own
binary, the resident pages of each 64 KiB window: where the megabytes are.
"""
import collections
import os
import re
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

def stopped_at_exit(argv, env):
    """Runs argv under strace, which makes its exit_group fail and stops it
    (SIGSTOP) there: the process as it ends, its pages as they are, with
    nothing but ptrace's stops to disturb it (gdb's breakpoints and reads
    had made 0.2 MB more resident). Returns (strace, pid)."""
    tracer = subprocess.Popen(["strace", "-qq", "-o", "/dev/null", "-e", "trace=exit_group",
                               "-e", "inject=exit_group:error=ENOSYS:signal=SIGSTOP", *argv],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    last = None
    while time.monotonic() < deadline:
        time.sleep(0.1)
        kids = subprocess.run(["pgrep", "-P", str(tracer.pid)], capture_output=True, text=True).stdout.split()
        try:
            # Stopped (t or T: strace stays attached) in two looks 0.1 s
            # apart, with no CPU time between: strace's own stops on the
            # way last microseconds.
            stat = open(f"/proc/{kids[0]}/stat").read().rsplit(")", 1)[1].split()
        except (IndexError, OSError):
            continue
        now = (stat[0], stat[11], stat[12])  # state, utime, stime
        if now[0] in "tT" and now == last:
            return tracer, int(kids[0])
        last = now
    tracer.kill()
    sys.exit(f"{argv[0]} did not stop at exit_group")


def print_resident(pid, binary):
    """/proc/PID/status's memory lines, resident kB by mapping (file and
    permissions), and for BINARY's own mappings the resident pages of each
    64 KiB window (the kernel's fault-around unit), from /proc/PID/pagemap."""
    for line in open(f"/proc/{pid}/status"):
        if re.match(r"(VmHWM|VmRSS|RssAnon|RssFile|RssShmem|VmExe|VmLib):", line):
            print("  " + line.strip())
    rss, cur = collections.Counter(), None
    for line in open(f"/proc/{pid}/smaps"):
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            f = line.split()
            cur = (os.path.basename(f[5]) if len(f) > 5 else "[anon]", f[1])
        elif line.startswith("Rss:"):
            rss[cur] += int(line.split()[1])
    for (name, perm), kb in sorted(rss.items(), key=lambda x: -x[1]):
        if kb:
            print(f"  {kb:6d} kB  {perm}  {name}")
    real = os.path.realpath(binary)
    base = None
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in open(f"/proc/{pid}/maps"):
            f = line.split()
            if len(f) < 6 or os.path.realpath(f[5]) != real:
                continue
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            base = lo if base is None else base
            pagemap.seek(lo // 4096 * 8)
            entries = pagemap.read((hi - lo) // 4096 * 8)
            windows = collections.Counter()
            for i in range((hi - lo) // 4096):
                if struct.unpack_from("<Q", entries, i * 8)[0] >> 63:
                    windows[(lo - base + i * 4096) & ~0xffff] += 1
            print(f"  {f[1]} at {lo - base:#x}: resident pages per 64 KiB window: " +
                  " ".join(f"{w:#x}:{n}" for w, n in sorted(windows.items())))


def resolve_ply(path):
    """(argv0, env) for ply; a libtool wrapper resolves to its real binary."""
    env = dict(os.environ)
    with open(path, "rb") as f:
        head = f.read(4096)
    if not head.startswith(b"#!"):
        return path, env
    real = os.path.join(os.path.dirname(path), ".libs", os.path.basename(path))
    text = open(path, errors="replace").read()
    m = re.search(r'LD_LIBRARY_PATH="([^"$:]+)', text)
    if not os.path.exists(real) or not m:
        sys.exit(f"{path} is a script and its real binary was not found")
    env["LD_LIBRARY_PATH"] = m.group(1)
    print(f"ply: {path} is libtool's wrapper; running {real} "
          f"with LD_LIBRARY_PATH={m.group(1)}", file=sys.stderr)
    return real, env


def main():
    args = sys.argv[1:]
    rounds, smaps = 20, False
    while args and args[0].startswith("--"):
        if args[0] == "--rounds":
            rounds, args = int(args[1]), args[2:]
        elif args[0] == "--smaps":
            smaps, args = True, args[1:]
        else:
            sys.exit(__doc__)
    if len(args) != 2:
        sys.exit(__doc__)
    ply, ply_env = resolve_ply(args[1])
    tools = {
        "bpfscope": ([args[0], "-q", "-e", "BEGIN { exit(); }"], dict(os.environ)),
        "ply": ([ply, "BEGIN { exit(0); }"], ply_env),
    }
    with tempfile.TemporaryDirectory(prefix="bpfscope-ply.") as tmp:
        maxrss = os.path.join(tmp, "maxrss")
        subprocess.run(["cc", "-O2", "-o", maxrss, os.path.join(HERE, "maxrss.c")], check=True)
        out = os.path.join(tmp, "rss")
        res = {t: [] for t in tools}
        for _ in range(rounds + 1):  # the first round warms the caches
            for tool, (argv, env) in tools.items():
                t0 = time.perf_counter()
                p = subprocess.run([maxrss, out, *argv], env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                wall = time.perf_counter() - t0
                if p.returncode:
                    sys.exit(f"{tool} exited {p.returncode}")
                res[tool].append((wall * 1e3, int(open(out).read()) / 1024))
        res = {t: r[1:] for t, r in res.items()}
        print(f"BEGIN exit, {rounds} rounds in turn, load {os.getloadavg()[0]:.1f}")
        print(f"{'':<10}{'wall ms (median [min-max])':>30}{'peak RSS MB (median [min-max])':>34}")
        for tool, r in res.items():
            w = [x[0] for x in r]
            m = [x[1] for x in r]
            print(f"{tool:<10}{statistics.median(w):>12.2f} [{min(w):.2f}-{max(w):.2f}]"
                  f"{'':>6}{statistics.median(m):>10.2f} MiB [{min(m):.2f}-{max(m):.2f}]")
        wr = statistics.median(a[0] / b[0] for a, b in zip(res["bpfscope"], res["ply"]))
        mr = statistics.median(a[1] / b[1] for a, b in zip(res["bpfscope"], res["ply"]))
        print(f"bpfscope / ply (pairwise medians): wall {wr:.2f}, peak RSS {mr:.2f}")
        if smaps:
            for tool, (argv, env) in tools.items():
                print(f"\n{tool} at exit_group:")
                tracer, pid = stopped_at_exit(argv, env)
                try:
                    print_resident(pid, argv[0])
                finally:
                    os.kill(pid, signal.SIGKILL)
                    tracer.wait()

if __name__ == "__main__":
    main()
