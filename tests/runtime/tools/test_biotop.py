"""biotop on direct I/O to a loop device the test makes: one row per
process and direction with the requests, KiB and device numbers of what
dd did, the busiest first, at most -r rows, and one table per interval in
JSON, rows ordered by -s io, bytes, time or all."""
import json
import os
import subprocess
import unittest

from blockio import LoopDev, run_counted
from toolrun import BPFSCOPE, mount_tracefs, run_tool

HEADER = ["PID", "COMM", "D", "MAJ", "MIN", "DISK", "I/O", "Kbytes", "AVGms"]
WRITES, READS = 30, 5


class BiotopTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def io(self, dev):
        self.wpid = dev.dd(write=True, bs=4096, count=WRITES)
        self.rpid = dev.dd(write=False, bs=65536, count=READS, seek=10)

    def totals(self, rows, dev):
        """{(pid, comm, d, maj, min): [ios, kbytes]} over the intervals, for
        the rows of this disk."""
        out = {}
        for r in rows:
            if r[5] != dev.name:
                continue
            t = out.setdefault(tuple(r[:5]), [0, 0])
            t[0] += int(r[6])
            t[1] += int(r[7])
        return out

    def rows(self, run):
        """The table rows of a run (9 columns), after its banner."""
        self.assertRegex(run.lines[0], r"^Tracing\.\.\. Output every \d+ secs\. Hit Ctrl-C to end$", run)
        return [l.split() for l in run.lines[1:] if len(l.split()) == 9 and l.split() != HEADER]

    def expected(self, dev):
        maj, mnr = dev.devno()
        return {(str(self.wpid), "dd", "W", str(maj), str(mnr)): [WRITES, WRITES * 4],
                (str(self.rpid), "dd", "R", str(maj), str(mnr)): [READS, READS * 64]}

    def test_rows(self):
        with LoopDev() as dev:
            run = run_counted(["biotop", "-C", "1", "3"], lambda: self.io(dev))
            self.assertEqual(run.rc, 0, run)
            tables = [i for i, l in enumerate(run.lines) if l.split() == HEADER]
            self.assertEqual(len(tables), 3, run)
            self.assertRegex(run.lines[tables[0] - 2], r"^\d\d:\d\d:\d\d loadavg: ")
            rows = self.rows(run)
            self.assertEqual(self.totals(rows, dev), self.expected(dev), run)
            for r in rows:
                self.assertRegex(r[8], r"^\d+\.\d\d$")

    def test_row_limit(self):
        with LoopDev() as dev:
            run = run_counted(["biotop", "-C", "-r", "1", "1", "3"], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        lines = run.lines
        for i, l in enumerate(lines):
            if l.split() == HEADER:
                rest = lines[i + 1:]
                n = next((k for k, x in enumerate(rest) if not x.strip()), len(rest))
                self.assertLessEqual(n, 1, run)

    def test_pid_filter(self):
        with LoopDev() as dev:
            def io():
                self.io(dev)  # dd's I/O: filtered out
                dev.random_io([200, 300, 400, 500])  # this process's
            run = run_counted(["biotop", "-C", "-p", str(os.getpid()), "1", "2"], io)
        self.assertEqual(run.rc, 0, run)
        rows = self.rows(run)
        self.assertTrue(rows, run)
        self.assertEqual({r[0] for r in rows}, {str(os.getpid())}, run)
        self.assertEqual(sum(int(r[6]) for r in rows if r[5] == dev.name), 4, run)

    def test_sort(self):
        # One dd makes 40 writes of 4 KiB (160 KiB), another 3 reads of
        # 128 KiB (384 KiB): -s io puts the writer first; -s bytes and -s all
        # (I/O + bytes + time, dominated by bytes) the reader; -s time orders
        # by total time, I/O x AVGms.
        with LoopDev() as dev:
            def io():
                self.small = dev.dd(write=True, bs=4096, count=40)
                self.big = dev.dd(write=False, bs=131072, count=3, seek=8)
            for mode, first in (("io", "small"), ("bytes", "big"), ("all", "big"), ("time", None)):
                with self.subTest(mode=mode):
                    # All rows (-r): other I/O on the machine must not push
                    # the test's own rows out of the top 20.
                    run = run_counted(["biotop", "-C", "-r", "100000", "-s", mode, "3", "1"], io)
                    self.assertEqual(run.rc, 0, run)
                    rows = self.rows(run)
                    mine = [r for r in rows if r[5] == dev.name]
                    pids = [int(r[0]) for r in mine]
                    self.assertEqual(sorted(pids), sorted([self.small, self.big]), run)
                    if first:
                        self.assertEqual(pids[0], getattr(self, first), run)
                    else:
                        # AVGms is rounded to 0.005 ms, so a row's total
                        # I/O x AVGms is off by up to 0.005 ms per I/O.
                        for a, b in zip(rows, rows[1:]):
                            slack = 0.005 * (int(a[6]) + int(b[6]))
                            self.assertGreaterEqual(int(a[6]) * float(a[8]) + slack, int(b[6]) * float(b[8]), run)
        p = subprocess.run([BPFSCOPE, "biotop", "-s", "size"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn('biotop: -s: invalid value "size" (one of: all, io, bytes, time)', p.stderr, p)

    def test_json_tables(self):
        with LoopDev() as dev:
            run = run_counted(["-f", "json", "biotop", "-C", "1", "3"], lambda: self.io(dev))
            self.assertEqual(run.rc, 0, run)
            tables = run.json("table")
            self.assertEqual(len(tables), 3, run)
            rows = []
            for t in tables:
                for r in t["data"]:
                    self.assertEqual(list(r), ["pid", "comm", "d", "maj", "min", "disk", "i/o", "kbytes", "avgms"])
                    self.assertIsInstance(r["avgms"], float)
                    rows.append([str(r[k]) for k in ("pid", "comm", "d", "maj", "min", "disk", "i/o", "kbytes")])
            self.assertEqual(self.totals(rows, dev), self.expected(dev), run)


if __name__ == "__main__":
    unittest.main()
