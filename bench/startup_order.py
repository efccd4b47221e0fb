#!/usr/bin/env python3
"""Writes cmake/startup-order.txt: the functions bpfscope runs at start-up,
which the release link places together (CMakeLists.txt, ld.lld's
--symbol-ordering-file; BENCHMARKS.md, "Start and memory against ply").

usage: bench/startup_order.py BPFSCOPE [OUT]   (root; needs valgrind)

A page of text that a start touches is mapped with its neighbours (the
kernel's fault-around, 64 KiB), so start-up code spread over the 3 MB of text
made most of it resident. Each program below runs under callgrind; the
functions of bpfscope's own object that ran, program by program (the first
program's first), are the list. A stale list costs only memory: a name the
link no longer has is skipped.
"""
import os
import re
import subprocess
import sys
import tempfile

PROGRAMS = (
    ["-e", "BEGIN { exit(); }"],
    ["-e", "tracepoint:syscalls:sys_enter_getppid { @[comm] = count(); } "
           "interval:ms:10 { exit(); }"],
    ["-o", "{tmp}/out", "-e",
     'tracepoint:syscalls:sys_enter_getppid { printf("%d %s\\n", pid, comm); } '
     "interval:ms:10 { exit(); }"],
    ["-e", "tracepoint:sock:inet_sock_set_state { $sk = (struct sock *)args->skaddr; "
           "@[$sk->__sk_common.skc_family] = hist(args->newstate); } "
           "interval:ms:10 { exit(); }"],
)


def functions(callgrind_out, binary):
    """Names of the functions of BINARY's object that ran, in file order."""
    obs, fns, ob, names = {}, {}, None, []
    for line in open(callgrind_out):
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                obs[m.group(2)] = m.group(3).strip()
            if m.group(1) == "ob":
                ob = obs.get(m.group(2))
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?", line)
        if m:
            if m.group(3):
                fns[m.group(2)] = m.group(3).strip()
            if m.group(1) == "fn" and ob and os.path.realpath(ob) == binary:
                names.append(fns[m.group(2)])
    return names


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.realpath(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(here), "cmake", "startup-order.txt")
    order, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for i, prog in enumerate(PROGRAMS):
            cg = os.path.join(tmp, f"cg.{i}")
            args = [a.replace("{tmp}", tmp) for a in prog]
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                            f"--callgrind-out-file={cg}", binary, "-q", *args],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=600, check=True)
            names = functions(cg, binary)
            new = [n for n in names if n not in seen]
            seen.update(new)
            order += new
            print(f"{' '.join(prog)[:60]}: {len(names)} functions, {len(new)} new",
                  file=sys.stderr)
    with open(out, "w") as f:
        f.write("".join(n + "\n" for n in order))
    print(f"{out}: {len(order)} functions", file=sys.stderr)


main()
