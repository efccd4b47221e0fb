"""biostacks on direct I/O to a loop device the test makes: dd's writes
and this process's reads each have a histogram whose key names the process,
its pid, the disk and a kernel stack through the block device's write or
read path, holding the number of requests made."""
import os
import re
import unittest

from blockio import LoopDev, run_counted
from toolrun import mount_tracefs, run_tool

WRITES, READS = 12, 7


def tables(lines):
    """[(key text, stack frames, total count)] from biostacks' text output."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("comm = "):
            frames = []
            i += 1
            while i < len(lines) and lines[i].startswith("        ") and "->" not in lines[i]:
                frames.append(lines[i].strip())
                i += 1
            count = 0
            while i < len(lines) and not lines[i].startswith("comm = "):
                m = re.match(r"^\s*\d+ -> \d+\s+: (\d+)", lines[i])
                if m:
                    count += int(m.group(1))
                i += 1
            out.append((line, frames, count))
        else:
            i += 1
    return out


class BiostacksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def io(self, dev):
        self.wpid = dev.dd(write=True, count=WRITES)
        dev.random_io([100 + 10 * i for i in range(READS)])

    def test_stacks_per_process(self):
        with LoopDev() as dev:
            run = run_tool(["biostacks", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        got = tables(run.lines)
        writes = [t for t in got if t[0].startswith("comm = dd, pid = %d, disk = %s," % (self.wpid, dev.name))]
        reads = [t for t in got if t[0].startswith("comm = python3, pid = %d, disk = %s," % (os.getpid(), dev.name))
                 or t[0].startswith("comm = %s, pid = %d," % (open("/proc/self/comm").read().strip(), os.getpid()))]
        self.assertEqual(sum(t[2] for t in writes), WRITES, run)
        self.assertEqual(sum(t[2] for t in reads), READS, run)
        self.assertEqual(len(got), len(writes) + len(reads), run)
        for _, frames, _ in writes:
            self.assertTrue(any(f.startswith("blkdev_write_iter+") for f in frames), frames)
            self.assertTrue(any(f.startswith("blk_mq_submit_bio+") for f in frames), frames)
        for _, frames, _ in reads:
            self.assertTrue(any(f.startswith("blkdev_read_iter+") for f in frames), frames)

    def test_duration_and_json(self):
        with LoopDev() as dev:
            run = run_counted(["-f", "json", "biostacks", "-m", "-d", dev.name, "2"], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        hists = run.json("hist")
        self.assertEqual(len(hists), 1, run)
        data = hists[0]["data"]["@msecs"]
        n = 0
        for key, buckets in data.items():
            self.assertIn("disk=" + dev.name, key)
            self.assertIn("blk_mq_submit_bio+", key)
            n += sum(b["count"] for b in buckets)
        self.assertEqual(n, WRITES + READS, run)


if __name__ == "__main__":
    unittest.main()
