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
import glob
import os
import re
import subprocess
import sys
import tempfile

# The first is bench/ply.py's program as it runs it; the second adds what a
# run prints without -q ("Attached 1 probe").
PROGRAMS = (
    ["-q", "-e", "BEGIN { exit(); }"],
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


# Static C libraries built without per-function sections: naming one of
# their functions moves its whole object (libbpf.o: 90 kB of text) into the
# list's place. Their functions go last in each program's group, so that
# they do not split the group's own run of functions, smaller objects first:
# the group's last 64 KiB window then holds as many of them as it can, and
# libbpf.o, whose functions that run lie in its first 25 kB, comes last.
WHOLE_OBJECT_ARCHIVES = ("libbpf.a", "libelf.a", "libz.a")


def whole_object_functions():
    """{function: text size of its archive member} for those archives."""
    sizes = {}
    for archive in WHOLE_OBJECT_ARCHIVES:
        path = subprocess.run(["cc", f"-print-file-name={archive}"], capture_output=True,
                              text=True, check=True).stdout.strip()
        if not os.path.isabs(path):
            continue
        out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True).stdout
        names, text = [], 0  # the current member's
        for line in out.splitlines() + [""]:
            if not line.strip() or line.endswith(":"):
                sizes.update((n, text) for n in names)
                names, text = [], 0
                continue
            f = line.split()
            if len(f) == 4:
                names.append(f[3])
                if f[2] in "tT":
                    text += int(f[1], 16)
            elif len(f) == 3:
                names.append(f[2])
    return sizes


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.realpath(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(here), "cmake", "startup-order.txt")
    # _start (crt1.o's section; callgrind names it by address) and crtbegin.o's
    # frame_dummy run first.
    order, seen = ["_start", "frame_dummy"], {"_start", "frame_dummy"}
    whole = whole_object_functions()
    with tempfile.TemporaryDirectory() as tmp:
        for i, prog in enumerate(PROGRAMS):
            cg = os.path.join(tmp, f"cg.{i}")
            # A run may fork (a child of its own): each process writes its
            # own file, the parent (the lowest pid) first.
            args = [a.replace("{tmp}", tmp) for a in prog]
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no",
                            f"--callgrind-out-file={cg}.%p", binary, *args],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=600, check=True)
            outs = sorted(glob.glob(cg + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
            names = [n for out in outs for n in functions(out, binary)]
            new = list(dict.fromkeys(n for n in names if n not in seen))
            seen.update(new)
            order += [n for n in new if n not in whole] + sorted((n for n in new if n in whole), key=whole.get)
            print(f"{' '.join(prog)[:60]}: {len(names)} functions, {len(new)} new",
                  file=sys.stderr)
    with open(out, "w") as f:
        f.write("".join(n + "\n" for n in order))
    print(f"{out}: {len(order)} functions", file=sys.stderr)


if __name__ == "__main__":
    main()
