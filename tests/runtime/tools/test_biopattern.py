"""biopattern on direct I/O to a loop device the test makes: sequential dd
writes are 100% sequential, reads at scattered offsets 100% random, a mix
gives the share issued; libbpf-tools' biopattern prints the same line."""
import os
import re
import unittest

from blockio import LoopDev, run_counted, scattered
from toolrun import mount_tracefs, run_tool, start_twin

HEADER = "DISK      %RND  %SEQ    COUNT     KBYTES"


def rows(run, dev):
    return [l.split() for l in run.lines if l.split()[:1] == [dev.name] or l.split()[1:2] == [dev.name]]


class BiopatternTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_sequential(self):
        with LoopDev() as dev:
            run = run_tool(["biopattern", "-d", dev.name], lambda: dev.dd(write=True, count=30))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[1], HEADER)
        # The first I/O has no previous one to compare with: 29 counted.
        self.assertEqual(rows(run, dev), [[dev.name, "0", "100", "29", "116"]], run)

    def test_random(self):
        with LoopDev() as dev:
            run = run_tool(["biopattern", "-d", dev.name], lambda: dev.random_io(scattered(20, 4000)))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(rows(run, dev), [[dev.name, "100", "0", "19", "76"]], run)

    def mixed(self, dev):
        # 21 sequential writes from block 0, then 10 reads at scattered blocks
        # from 100 on: 20 sequential and 10 random I/Os after the first.
        dev.dd(write=True, count=21)
        dev.random_io([100 + b for b in scattered(10, 3000, seed=2)])

    def test_mixed_share_and_json(self):
        with LoopDev() as dev:
            run = run_tool(["-f", "json", "biopattern", "-d", dev.name], lambda: self.mixed(dev))
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event")]
        self.assertEqual(events, [{"disk": dev.name, "rnd_pct": 33, "seq_pct": 66, "count": 30, "kbytes": 120}], run)

    def test_intervals_with_timestamps(self):
        with LoopDev() as dev:
            run = run_counted(["biopattern", "-T", "-d", dev.name, "1", "2"], lambda: self.mixed(dev))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[1], "TIME      " + HEADER)
        got = rows(run, dev)
        self.assertTrue(got, run)
        for r in got:
            self.assertRegex(r[0], r"^\d\d:\d\d:\d\d$")
        self.assertEqual(sum(int(r[4]) for r in got), 30, run)

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/biopattern"):
            self.skipTest("libbpf-tools not installed")
        with LoopDev() as dev:
            twin = start_twin(["/usr/sbin/biopattern", "-d", dev.name], "DISK")
            try:
                run = run_tool(["biopattern", "-d", dev.name], lambda: self.mixed(dev), settle=0.5)
            finally:
                twin.stop()
            theirs = twin.finish()
        self.assertEqual(rows(run, dev), [[dev.name, "33", "66", "30", "120"]], run)
        self.assertEqual(rows(run, dev), rows(theirs, dev), (run, theirs))


if __name__ == "__main__":
    unittest.main()
