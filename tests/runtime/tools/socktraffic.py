"""Traffic for the socket tools' tests: Python programs run in a network
namespace of a toolrun.NetnsPair under a command name of their own (so the
tools' per-command keys can be told from other processes'), started paused so
that their pid is known before the tracer starts."""
import subprocess
import sys

PRELUDE = r"""
import ctypes, errno, json, os, select, socket, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
print(os.getpid(), flush=True)
sys.stdin.readline()
ARGS = sys.argv[2:]
"""


class Actor:
    """Python `code` (after PRELUDE: ARGS holds the extra arguments) in side
    `side` of `pair` (pair None: this namespace), named `comm`; paused until
    go()."""

    def __init__(self, pair, side, comm, code, *args):
        argv = ([] if pair is None else ["ip", "netns", "exec", pair.ns(side)]) + \
            [sys.executable, "-c", PRELUDE + code, comm]
        self.comm = comm
        self.proc = subprocess.Popen(argv + [str(a) for a in args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.pid = int(self.proc.stdout.readline())

    def go(self, timeout=30):
        """Runs the code; returns its stdout lines."""
        try:
            out, _ = self.proc.communicate("go\n", timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        assert self.proc.returncode == 0, out
        return out.splitlines()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f and not f.closed:
                f.close()


def maps(run):
    """The maps of a -f json run, merged: {"@name": value}."""
    out = {}
    for m in run.json(None):
        if m["type"] in ("map", "hist", "stats"):
            out.update(m["data"])
    return out
