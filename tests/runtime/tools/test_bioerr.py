"""bioerr on a loop device over a file in a tmpfs too small for it: direct
writes past the tmpfs's size fail with ENOSPC, and bioerr prints one line
per failed request with the device's numbers, sector, size and errno."""
import errno
import unittest

from blockio import LoopDev
from toolrun import TraceInstance, mount_tracefs, run_tool

HEADER = "TIME     DEVICE  FLAGS SECTOR     BYTES    ERR MESSAGE"


class BioerrTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def fill(self, dev):
        # 1 MiB fits (blocks 0-255); the 20 writes after it fail.
        self.failed = dev.failed_io(range(276), bs=4096, write=True)

    def run_witnessed(self, args, dev):
        """Runs bioerr around the writes, beside a tracefs instance that
        records block:block_rq_error on the device: what the kernel fired.
        Returns (run, fired)."""
        maj, mnr = dev.devno()
        with TraceInstance("block/block_rq_error", "dev == %d" % ((maj << 20) | mnr)) as w:
            run = run_tool(args, lambda: self.fill(dev))
            fired, lost = w.count(), w.lost()
        self.assertEqual(lost, 0)
        # Each failed write is one failed request, unless the kernel did not
        # fire the event for it: then the witness lacks it too.
        self.assertLessEqual(fired, len(self.failed))
        return run, fired

    def test_one_line_per_error(self):
        with LoopDev(mb=8, full_after_kb=1024) as dev:
            run, fired = self.run_witnessed(["bioerr"], dev)
            maj, mnr = dev.devno()
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[1], HEADER)
        self.assertTrue(self.failed)
        self.assertTrue(all(e == errno.ENOSPC for _, e in self.failed), self.failed)
        dev_col = "%d,%d" % (maj, mnr)
        rows = [l.split(None, 6) for l in run.lines[2:] if l.split()[1:2] == [dev_col]]
        want = [[dev_col, "WS", str(8 * off), "4096", "-28", "No space left on device"] for off, _ in self.failed]
        # Every firing is a row, or one the run reports missed.
        self.assertEqual(len(rows) + run.missed(), fired, (fired, run))
        if fired == len(self.failed):
            self.assertInOrder([r[1:] for r in rows], want, run)
        for r in rows:
            self.assertRegex(r[0], r"^\d\d:\d\d:\d\d$")

    def test_json(self):
        with LoopDev(mb=8, full_after_kb=1024) as dev:
            run, fired = self.run_witnessed(["-f", "json", "bioerr"], dev)
            maj, mnr = dev.devno()
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event") if (m["data"]["major"], m["data"]["minor"]) == (maj, mnr)]
        self.assertEqual(len(events) + run.missed(), fired, (fired, run))
        if fired != len(self.failed):
            return
        for e in events:
            self.assertEqual(list(e), ["time", "major", "minor", "flags", "sector", "bytes", "error", "message"])
        self.assertInOrder([(e["sector"], e["bytes"], e["error"]) for e in events],
                           [(8 * off, 4096, -errno.ENOSPC) for off, _ in self.failed], run)

    def assertInOrder(self, got, want, run):
        """got is want less the firings the run reported missed (a firing
        the kernel skipped because another BPF program was running on that
        CPU, as when the completion interrupts one): the rows that are there
        come in the order of the writes, each with its own numbers."""
        self.assertEqual(len(want) - len(got), run.missed(), run)
        rest = iter(want)
        for g in got:
            self.assertIn(g, rest, (g, got, want))


if __name__ == "__main__":
    unittest.main()
