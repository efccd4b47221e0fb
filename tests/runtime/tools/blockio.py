"""Block I/O for the disk tools' tests: a loop device on a file the test
creates (removed on exit, also on failure), and direct I/O of known sizes,
counts and offsets on it, so that every request the tools see on that disk
is one the test made."""
import mmap
import os
import random
import subprocess
import tempfile


class LoopDev:
    """A loop device over a sparse file of `mb` MiB in a fresh temporary
    directory: `path` is /dev/loopN, `name` loopN. With `full_after_kb` the
    directory is a tmpfs of that size, so that writes past it fail with
    ENOSPC (the loop driver completes those requests with an error). The
    I/O scheduler is set every time (a loop device keeps the one a test set
    before it was detached)."""

    def __init__(self, mb=64, full_after_kb=0, scheduler="none"):
        self.mb, self.full_after_kb, self.scheduler = mb, full_after_kb, scheduler
        self.dir = self.path = None
        self.mounted = False

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="bpfscope-loop-")
        img = os.path.join(self.dir, "disk.img")
        try:
            if self.full_after_kb:
                subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % self.full_after_kb, "bpfscope-test",
                                self.dir], check=True)
                self.mounted = True
            with open(img, "wb") as f:
                f.truncate(self.mb << 20)
            self.path = subprocess.run(["losetup", "-f", "--show", img], check=True, capture_output=True,
                                       text=True).stdout.strip()
        except Exception:
            self.__exit__(None, None, None)
            raise
        self.name = os.path.basename(self.path)
        try:
            with open("/sys/block/%s/queue/scheduler" % self.name, "w") as f:
                f.write(self.scheduler)
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def stat(self):
        """The block layer's own counters of the device, /sys/block/NAME/stat:
        {"reads", "read_merges", "read_sectors", "read_ticks", "writes",
        "write_merges", ...}: requests completed (a merged bio is no new
        request), counted by the kernel whatever traces it."""
        names = ["reads", "read_merges", "read_sectors", "read_ticks", "writes", "write_merges", "write_sectors",
                 "write_ticks", "in_flight", "io_ticks", "time_in_queue"]
        with open("/sys/block/%s/stat" % self.name) as f:
            return dict(zip(names, (int(x) for x in f.read().split())))

    def devno(self):
        """(major, minor)."""
        with open("/sys/block/%s/dev" % self.name) as f:
            return tuple(int(x) for x in f.read().split(":"))

    def __exit__(self, *exc):
        if self.path:
            subprocess.run(["losetup", "-d", self.path], stderr=subprocess.DEVNULL)
            self.path = None
        if self.mounted:
            subprocess.run(["umount", self.dir], stderr=subprocess.DEVNULL)
            self.mounted = False
        if self.dir:
            for f in os.listdir(self.dir):
                os.unlink(os.path.join(self.dir, f))
            os.rmdir(self.dir)
            self.dir = None

    def dd(self, write=True, bs=4096, count=1, seek=0, cgroup=None):
        """dd with direct I/O: `count` requests of `bs` bytes from block
        `seek` (in bs units), in the child of `cgroup` (toolrun.Cgroup) if
        given. Returns the dd process's pid."""
        if write:
            argv = ["dd", "if=/dev/zero", "of=" + self.path, "oflag=direct", "seek=%d" % seek]
        else:
            argv = ["dd", "if=" + self.path, "of=/dev/null", "iflag=direct", "skip=%d" % seek]
        argv += ["bs=%d" % bs, "count=%d" % count, "status=none"]
        if cgroup:
            argv = cgroup.argv(argv)
        p = subprocess.Popen(argv)
        assert p.wait(timeout=30) == 0
        return p.pid

    def random_io(self, offsets, bs=4096, write=False):
        """One direct read (or write) of bs bytes at each block offset (in bs
        units), in order, from this Python process. Returns the number of
        I/Os."""
        return len(offsets) - len(self.failed_io(offsets, bs, write))

    def failed_io(self, offsets, bs=4096, write=True):
        """As random_io; returns the offsets whose I/O failed, with their
        errno: [(offset, errno)]."""
        failed = []
        fd = os.open(self.path, (os.O_RDWR if write else os.O_RDONLY) | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, bs)
            for off in offsets:
                try:
                    if write:
                        os.pwritev(fd, [buf], off * bs)
                    else:
                        os.preadv(fd, [buf], off * bs)
                except OSError as e:
                    failed.append((off, e.errno))
        finally:
            os.close(fd)
        return failed


class Completed:
    """with Completed(dev) as c: I/O -- afterwards c.reads, c.writes: the
    requests the kernel completed on the device over the block (the delta
    of LoopDev.stat()). Read it inside the tool's window (the tool attached
    before, stopped after): the I/O of the tests waits for each request's
    completion, so the two windows see the same requests."""

    def __init__(self, dev):
        self.dev = dev
        self.reads = self.writes = None

    def __enter__(self):
        self.before = self.dev.stat()
        return self

    def __exit__(self, *exc):
        after = self.dev.stat()
        self.reads = after["reads"] - self.before["reads"]
        self.writes = after["writes"] - self.before["writes"]
        if os.environ.get("BLOCKIO_LOG"):  # to keep the numbers a run saw
            with open(os.environ["BLOCKIO_LOG"], "a") as f:
                f.write("%s reads=%d writes=%d\n" % (self.dev.name, self.reads, self.writes))

    def __repr__(self):
        return "Completed(%s: reads=%s writes=%s)" % (self.dev.name, self.reads, self.writes)


def scattered(n, blocks, seed=1):
    """n block offsets in [0, blocks) no two of which are adjacent in
    issue order (so that every I/O after the first is random)."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        b = rng.randrange(blocks)
        if out and abs(b - out[-1]) <= 1:
            continue
        out.append(b)
    return out


def run_counted(args, traffic, timeout=15):
    """Runs a tool given an interval and a count around `traffic()` and
    waits until it exits by itself (SIGINT after `timeout` seconds)."""
    from toolrun import start_tool
    p = start_tool(args)
    try:
        traffic()
        p.proc.wait(timeout=timeout)
    except Exception:
        p.stop()
    return p.finish()
