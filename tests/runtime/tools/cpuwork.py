"""CPU and scheduler work of known shape for the CPU tools' tests: the
cpu_work helper (tests/runtime/helpers/cpu_work.c), built next to bpfscope.

A Work is started paused: its pid is known before it does anything (for -p
tests), `go()` runs the steps, and the process stays alive until `close()`,
so that a tool can still name the functions of its user stacks when it
prints them at exit."""
import os
import shutil
import subprocess
import tempfile

from toolrun import BPFSCOPE

CPU_WORK = os.path.join(os.path.dirname(os.path.abspath(BPFSCOPE)), "cpu_work")


class Work:
    """`comm`: run the helper under that name (a symbolic link of that name
    to it, executed: the kernel names a process after the file it
    executes), e.g. for schedwitness to tell its threads from any other
    process's; default cpu_work."""

    def __init__(self, *steps, cpu=None, comm=None):
        self.comm = comm or "cpu_work"
        self.linkdir = None
        exe = CPU_WORK
        if comm:
            self.linkdir = tempfile.mkdtemp(prefix="cpuwork-")
            exe = os.path.join(self.linkdir, comm)
            os.symlink(CPU_WORK, exe)
        argv = [exe, "-w"] + [str(s) for s in steps]
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        assert self.proc.stdout.readline().strip() == "ready"

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def wait_done(self, timeout=20):
        assert self.proc.stdout.readline().strip() == "done"

    def run(self):
        """The steps, from start to end."""
        self.go()
        self.wait_done()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        self.proc.stdout.close()
        if self.linkdir:
            shutil.rmtree(self.linkdir)
            self.linkdir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None and self.proc.poll() is None:
            self.proc.kill()
        self.close()
