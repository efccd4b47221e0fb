#!/usr/bin/env python3
"""A probe's count against the kernel's own count of the same event.

usage: fault_witness.py BPFSCOPE N PROGRAM
Runs `BPFSCOPE -c "fault_witness.py --work N" -e PROGRAM`: the child, named
bsfPID (this run's pid), makes N openat() calls whose path is the unmapped user address 16,
so that each call takes kernel page faults at address 16
(exceptions:page_fault_kernel) in getname(), and more in any probe that
reads the path. A tracefs instance with the same event enabled, filtered to
that address and that command, is the witness: it counts every firing the
kernel made. Prints "faults=F missed=M witness=W": F from the program's @faults
map, M the firings bpfscope reported missed for its probes; then whether
every firing was counted or reported."""
import ctypes
import os
import re
import subprocess
import sys

if sys.argv[1] == "--work":
    libc = ctypes.CDLL(None, use_errno=True)
    comm = sys.argv[3] if len(sys.argv) > 3 else "bsfault"
    libc.prctl(15, comm.encode(), 0, 0, 0)  # PR_SET_NAME
    for _ in range(int(sys.argv[2])):
        libc.syscall(257, -100, ctypes.c_void_p(16), 0)  # openat(AT_FDCWD, 16, 0): EFAULT
    sys.exit(0)

bpfscope, n, program = sys.argv[1], sys.argv[2], sys.argv[3]
tracing = "/sys/kernel/tracing"
if not os.path.exists(tracing + "/events"):
    subprocess.run(["mount", "-t", "tracefs", "tracefs", tracing], check=True)
inst = "%s/instances/bpfscope_witness_%d" % (tracing, os.getpid())
# The child's name is this run's own: two runs at once (a suite beside
# another) do not count each other's faults.
comm = "bsf%d" % os.getpid()
os.mkdir(inst)
try:
    event = inst + "/events/exceptions/page_fault_kernel"
    with open(event + "/filter", "w") as f:
        f.write('address == 16 && comm == "%s"' % comm)
    with open(event + "/enable", "w") as f:
        f.write("1")
    run = subprocess.run([bpfscope, "-c", "%s %s --work %s %s" % (sys.executable, os.path.abspath(__file__), n, comm),
                          "-e", program], capture_output=True, text=True, timeout=120)
    with open(event + "/enable", "w") as f:
        f.write("0")
    with open(inst + "/trace") as f:
        witness = sum(1 for line in f if "page_fault_kernel" in line)
finally:
    os.rmdir(inst)
m = re.search(r"^@faults: (\d+)$", run.stdout, re.M)
missed = sum(int(x) for x in re.findall(r"^WARNING: .+: (\d+) firings? (?:was|were) missed", run.stderr, re.M))
print("faults=%s missed=%d witness=%d" % (m.group(1) if m else "none", missed, witness))
# Every firing the witness saw is counted, or within what bpfscope reports
# missed (which may also hold firings the probe's filter would have dropped:
# a classic tracepoint's program is skipped while any BPF program, another
# tracer's too, runs on that CPU).
counted = int(m.group(1)) if m else -1
print("every firing counted or reported" if 0 <= counted <= witness <= counted + missed
      else "firings neither counted nor reported: %d" % (witness - counted))
if run.returncode or not m:
    print(run.stdout, run.stderr, file=sys.stderr)
