#!/usr/bin/env python3
"""Where a start's CPU time goes (BENCHMARKS.md, "Start and memory against ply").

usage: bench/start_profile.py [--runs N] BPFSCOPE [PLY]   (root; needs perf)

Samples N starts of `BEGIN { exit(); }` of each tool (default 200; ply's
build tree as bench/ply.py takes it) with `perf record -g -F 20000`, and
prints each tool's samples by where they fell: the kernel (by the system
call or fault its call chain entered through), the dynamic loader, libc and
the tool's own code (bpfscope's by pipeline stage, from the C++ namespace),
with the CPU time per start that the share stands for (`perf stat`'s
task-clock).
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ply import resolve_ply  # noqa: E402  (bench/ply.py)

# Kernel samples by what the kernel was doing: the system call or
# exception their call chain entered through (bpf, mmap, the page fault
# handler...), else the scheduler or interrupt work they were in.
def kernel_group(frames):
    for f in frames:
        m = re.match(r"(?:__x64_sys_|__do_sys_|__se_sys_|ksys_)(\w+)", f)
        if m:
            return "kernel: " + m.group(1) + "()"
        if re.match(r"(asm_)?exc_page_fault|do_user_addr_fault|handle_mm_fault", f):
            return "kernel: page faults"
    leaf = frames[0] if frames else "?"
    if re.search(r"schedule|switch|finish_task|idle", leaf):
        return "kernel: scheduling"
    if any(re.search(r"execve|bprm|load_elf", f) for f in frames):
        return "kernel: execve()"
    if any(re.search(r"do_exit|exit_mmap|mmput", f) for f in frames):
        return "kernel: exit"
    return "kernel: interrupts and other"


def own_group(sym):
    m = re.search(r"bpfscope::(\w+)::", sym)
    if m:
        return f"own: {m.group(1)}"
    if re.match(r"(std::|void std::|__gnu|operator new|operator delete|__cxa|__cxx|_Unwind)", sym):
        return "own: C++ library"
    if sym.startswith("fmt::"):
        return "own: fmt"
    if re.match(r"(bpf_|btf_|libbpf|ring_buffer|kernel_supports|probe_|elf_|gelf_)", sym):
        return "own: libbpf, libelf"
    return "own: main and the rest"


def profile(argv, env, runs, tmp, name):
    data = os.path.join(tmp, f"{name}.data")
    loop = f"for i in $(seq {runs}); do \"$@\" >/dev/null 2>&1 </dev/null; done"
    subprocess.run(["perf", "record", "-q", "-g", "-F", "20000", "-o", data, "--", "sh", "-c", loop, "sh", *argv],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    comm = os.path.basename(argv[0])[:15]
    script = subprocess.run(["perf", "script", "-i", data, "--comm", comm, "-F", "ip,sym,dso"],
                            capture_output=True, text=True).stdout
    stat = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock", "-r", str(min(runs, 50)), *argv],
                          env=env, capture_output=True, text=True).stderr
    ms = next((float(l.split(",")[0]) for l in stat.splitlines() if ",task-clock," in l), 0.0)
    groups = collections.Counter()
    # perf script: one block per sample, a frame per line (address, symbol,
    # (dso)), the sampled one first; blocks end with an empty line.
    for block in script.split("\n\n"):
        frames = [re.match(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)$", l) for l in block.strip().splitlines()]
        frames = [(m.group(1), m.group(2)) for m in frames if m]
        if not frames:
            continue
        sym, dso = frames[0]
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        if "kernel" in dso:
            groups[kernel_group([re.sub(r"\+0x[0-9a-f]+$", "", f) for f, d in frames if "kernel" in d])] += 1
        elif "ld-linux" in dso and re.search(r"cpu_features|intel_|handle_amd|cache_info|get_common|update_active", sym):
            # glibc's CPU and cache detection runs cpuid, which a virtual
            # machine's hypervisor traps: the same for every process here.
            groups["dynamic loader: CPU and cache detection (cpuid)"] += 1
        elif "ld-linux" in dso:
            groups["dynamic loader: loading, relocation, symbol lookup"] += 1
        elif os.path.basename(dso).startswith("libc"):
            groups["libc"] += 1
        else:
            groups[own_group(sym)] += 1
    return groups, ms


def main():
    args = sys.argv[1:]
    runs = 200
    if args[:1] == ["--runs"]:
        runs, args = int(args[1]), args[2:]
    if not args or len(args) > 2:
        sys.exit(__doc__)
    tools = {"bpfscope": ([os.path.realpath(args[0]), "-q", "-e", "BEGIN { exit(); }"], dict(os.environ))}
    if len(args) == 2:
        ply, env = resolve_ply(args[1])
        tools["ply"] = ([ply, "BEGIN { exit(0); }"], env)
    with tempfile.TemporaryDirectory(prefix="bpfscope-profile.") as tmp:
        for name, (argv, env) in tools.items():
            groups, ms = profile(argv, env, runs, tmp, name)
            total = sum(groups.values()) or 1
            print(f"{name}: {runs} starts, {total} samples; CPU per start {ms:.2f} ms (perf stat task-clock)")
            for group, n in sorted(groups.items(), key=lambda g: -g[1]):
                share = n / total
                print(f"  {share * 100:5.1f}%  {share * ms:5.2f} ms  {group}")


if __name__ == "__main__":
    main()
