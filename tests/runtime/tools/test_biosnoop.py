"""biosnoop on direct I/O to a loop device the test makes: one line per
request, with the pid and comm of the dd that issued it (not the loop
worker that completes it), the disk, the direction, the sectors and bytes
dd asked for."""
import re
import unittest

from blockio import LoopDev, run_counted
from toolrun import Cgroup, mount_tracefs, run_tool

HEADER = "TIME(s)     COMM           PID     DISK    T SECTOR     BYTES   LAT(ms)"
WRITES, READS = 10, 6


class BiosnoopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def io(self, dev):
        # 4 KiB writes from sector 0, then 8 KiB reads from byte 160 KiB (sector 320).
        self.wpid = dev.dd(write=True, bs=4096, count=WRITES)
        self.rpid = dev.dd(write=False, bs=8192, count=READS, seek=20)

    def expected(self, dev):
        return ([["dd", str(self.wpid), dev.name, "W", str(8 * i), "4096"] for i in range(WRITES)] +
                [["dd", str(self.rpid), dev.name, "R", str(320 + 16 * i), "8192"] for i in range(READS)])

    def test_columns(self):
        with LoopDev() as dev:
            run = run_tool(["biosnoop", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], HEADER)
        rows = [l.split() for l in run.lines[1:]]
        self.assertEqual([r[1:7] for r in rows], self.expected(dev), run)
        times = [float(r[0]) for r in rows]
        self.assertEqual(times[0], 0.0)
        self.assertEqual(times, sorted(times))
        for r in rows:
            self.assertRegex(r[7], r"^\d+\.\d{3}$")
            self.assertLess(float(r[7]), 1000)

    def test_cgroup(self):
        # The writes of a dd in the child of a cgroup the test makes, not the
        # reads of a dd outside it: -c names the parent.
        with LoopDev() as dev, Cgroup("biosnoop") as cg:
            def io():
                self.wpid = dev.dd(write=True, bs=4096, count=WRITES, cgroup=cg)
                self.rpid = dev.dd(write=False, bs=8192, count=READS, seek=20)
            run = run_tool(["biosnoop", "-d", dev.name, "-c", cg.path], io)
        self.assertEqual(run.rc, 0, run)
        rows = [l.split() for l in run.lines[1:]]
        self.assertEqual([r[1:7] for r in rows], self.expected(dev)[:WRITES], run)

    def test_queued_and_timestamp(self):
        with LoopDev() as dev:
            run = run_tool(["biosnoop", "-Q", "-t", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "TIMESTAMP       COMM           PID     DISK    T SECTOR     BYTES   "
                                       "QUE(ms) LAT(ms)")
        rows = [l.split() for l in run.lines[1:]]
        self.assertEqual([r[1:7] for r in rows], self.expected(dev), run)
        for r in rows:
            self.assertRegex(r[0], r"^\d\d:\d\d:\d\d\.\d{6}$")
            self.assertRegex(r[7], r"^\d+\.\d{3}$")
            self.assertRegex(r[8], r"^\d+\.\d{3}$")

    def test_json(self):
        with LoopDev() as dev:
            run = run_tool(["-f", "json", "biosnoop", "-Q", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event")]
        self.assertEqual(len(events), WRITES + READS, run)
        for e in events:
            self.assertEqual(list(e), ["time", "comm", "pid", "disk", "t", "sector", "bytes", "que_ms", "lat_ms"])
            self.assertIsInstance(e["time"], float)
            self.assertIsInstance(e["lat_ms"], float)
        got = [[e["comm"], str(e["pid"]), e["disk"], e["t"], str(e["sector"]), str(e["bytes"])] for e in events]
        self.assertEqual(got, self.expected(dev), run)

    def test_min_ms_and_duration(self):
        with LoopDev() as dev:
            # A loop device on a file answers well within a second.
            slow = run_tool(["biosnoop", "-m", "1000", "-d", dev.name], lambda: self.io(dev))
            timed = run_counted(["biosnoop", "-d", dev.name, "2"], lambda: self.io(dev))
        self.assertEqual(slow.rc, 0, slow)
        self.assertEqual(slow.lines, [HEADER], slow)
        self.assertEqual(timed.rc, 0, timed)
        self.assertEqual([l.split()[1:7] for l in timed.lines[1:]], self.expected(dev), timed)

    def test_other_disks_filtered(self):
        with LoopDev() as dev, LoopDev() as other:
            def io():
                other.dd(write=True, count=3)
                self.io(dev)
            run = run_tool(["biosnoop", "-d", dev.name], io)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(len(run.lines) - 1, WRITES + READS, run)
        self.assertTrue(all(re.search(r"\s%s\s" % dev.name, l) for l in run.lines[1:]), run)


if __name__ == "__main__":
    unittest.main()
