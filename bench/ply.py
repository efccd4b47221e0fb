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

--smaps also runs each tool once under gdb, stopped at exit_group, and prints
its resident kilobytes by mapping (file and permissions) and the
VmHWM/RssAnon/RssFile lines of /proc/PID/status: where the megabytes are.
"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

GDB_SCRIPT = r"""
set pagination off
catch syscall exit_group
run
python
import collections, os, re
pid = gdb.selected_inferior().pid
for l in open(f"/proc/{pid}/status"):
    if re.match(r"(VmHWM|VmRSS|RssAnon|RssFile|RssShmem|VmExe|VmLib):", l):
        print("status", l.strip())
rss = collections.Counter()
cur = None
for l in open(f"/proc/{pid}/smaps"):
    if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", l):
        f = l.split()
        cur = (os.path.basename(f[5]) if len(f) > 5 else "[anon]", f[1])
    elif l.startswith("Rss:"):
        rss[cur] += int(l.split()[1])
for (name, perm), kb in sorted(rss.items(), key=lambda x: -x[1]):
    if kb:
        print(f"map {kb:6d} kB  {perm}  {name}")
end
kill
quit
"""


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
            script = os.path.join(tmp, "smaps.gdb")
            with open(script, "w") as f:
                f.write(GDB_SCRIPT)
            for tool, (argv, env) in tools.items():
                print(f"\n{tool} at exit_group:")
                p = subprocess.run(["gdb", "-q", "-batch", "-x", script, "--args", *argv],
                                   env=env, capture_output=True, text=True)
                for l in p.stdout.splitlines():
                    if l.startswith(("status ", "map ")):
                        print("  " + l.split(" ", 1)[1])


main()
