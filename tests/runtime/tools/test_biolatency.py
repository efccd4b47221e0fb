"""biolatency on direct I/O to a loop device the test makes: the histograms
count exactly the requests issued (dd of 4 KiB blocks with O_DIRECT, one
request each), per disk and operation with -D -F, per interval with -T, and
libbpf-tools' biolatency counts the same requests."""
import os
import re
import unittest

from blockio import Completed, LoopDev, run_counted
from histrun import json_hists, text_hists, total
from toolrun import Cgroup, mount_tracefs, run_tool, start_twin

WRITES, READS = 40, 24


class BiolatencyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def io(self, dev):
        """dd's writes and reads; self.kernel: the requests the block layer
        completed on the device meanwhile (its own counters), which must be
        dd's: one request per 4 KiB direct I/O, none merged or split."""
        with Completed(dev) as self.kernel:
            dev.dd(write=True, count=WRITES)
            dev.dd(write=False, count=READS, seek=100)
        self.assertEqual((self.kernel.writes, self.kernel.reads), (WRITES, READS), self.kernel)

    def test_count_equals_ios(self):
        with LoopDev() as dev:
            run = run_tool(["biolatency", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing block device I/O... Hit Ctrl-C to end.")
        hists = text_hists(run.lines)
        self.assertEqual(list(hists), [("usecs", "")], run)
        self.assertEqual(total(hists[("usecs", "")]), WRITES + READS, run)
        # A loop device on a file answers within a second.
        self.assertEqual(total(hists[("usecs", "")], high=1 << 20), WRITES + READS, run)
        # A latency tool: its estimated percentiles follow the table, each
        # inside the table's range (the buckets' lowest low and highest high).
        n = r"([0-9.]+)"
        p = [re.match(r"^p50 = %s, p90 = %s, p99 = %s, p99\.9 = %s \(estimated within buckets\)$" % (n, n, n, n), l)
             for l in run.lines]
        p = [tuple(map(float, m.groups())) for m in p if m]
        self.assertEqual(len(p), 1, run)
        rows = [r for r in hists[("usecs", "")] if r[2]]
        self.assertTrue(rows[0][0] <= p[0][0] <= p[0][1] <= p[0][2] <= p[0][3] <= rows[-1][1], (p, rows))

    def test_cgroup(self):
        # The writes of a dd in the child of a cgroup the test makes count;
        # the reads of a dd outside it do not (-c names the parent).
        with LoopDev() as dev, Cgroup("biolatency") as cg:
            def io():
                dev.dd(write=True, count=WRITES, cgroup=cg)
                dev.dd(write=False, count=READS, seek=100)
            run = run_tool(["biolatency", "-d", dev.name, "-c", cg.path], io)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(total(text_hists(run.lines)[("usecs", "")]), WRITES, run)

    def test_per_disk_and_flags_milliseconds(self):
        with LoopDev() as dev:
            run = run_tool(["biolatency", "-D", "-F", "-m", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        got = {key: total(b) for (unit, key), b in hists.items()}
        self.assertEqual({u for u, _ in hists}, {"msecs"}, run)
        # Direct writes are sync and idle (dio), direct reads sync.
        self.assertEqual(got, {"disk = %s, flags = Idle-Sync-Write" % dev.name: WRITES,
                               "disk = %s, flags = Sync-Read" % dev.name: READS}, run)

    def test_queued_with_a_scheduler(self):
        with LoopDev(scheduler="mq-deadline") as dev:
            run = run_tool(["biolatency", "-Q", "-D", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        self.assertEqual(list(hists), [("usecs", "disk = " + dev.name)], run)
        self.assertEqual(total(hists[("usecs", "disk = " + dev.name)]), WRITES + READS, run)

    def test_intervals_with_timestamps(self):
        with LoopDev() as dev:
            run = run_counted(["biolatency", "-T", "-d", dev.name, "1", "2"], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        stamps = [l for l in run.lines if re.fullmatch(r"\d\d:\d\d:\d\d", l)]
        self.assertEqual(len(stamps), 2, run)
        # Each stamp heads its interval's histogram (the second may be empty).
        first = run.lines.index(stamps[0])
        self.assertRegex(run.lines[first + 1], r"^\s+usecs\s+: count\s+distribution$")
        counts = [int(m.group(1)) for m in (re.match(r"^\s*\d+ -> \d+\s+: (\d+)", l) for l in run.lines) if m]
        self.assertEqual(sum(counts), WRITES + READS, run)

    def test_json(self):
        with LoopDev() as dev:
            run = run_tool(["-f", "json", "biolatency", "-D", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        hists = json_hists(run)
        self.assertEqual(len(hists), 1, run)
        (name, key), buckets = next(iter(hists.items()))
        self.assertEqual(name, "@usecs")
        self.assertIn(dev.name, key)
        self.assertEqual(total(buckets), WRITES + READS, run)

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/biolatency"):
            self.skipTest("libbpf-tools not installed")
        with LoopDev() as dev:
            twin = start_twin(["/usr/sbin/biolatency", "-d", dev.name], "Tracing")
            try:
                run = run_tool(["biolatency", "-d", dev.name], lambda: self.io(dev), settle=0.5)
            finally:
                twin.stop()
            theirs = twin.finish()
        self.assertEqual(run.rc, 0, run)
        ours = text_hists(run.lines)[("usecs", "")]
        twin_hist = text_hists(theirs.lines)[("usecs", "")]
        self.assertEqual(total(ours), WRITES + READS, run)
        self.assertEqual(total(twin_hist), WRITES + READS, theirs)
        # Both time the same requests: most land in the same log2 bucket.
        mine = {lo: c for lo, _, c in ours}
        same = sum(min(c, mine.get(lo, 0)) for lo, _, c in twin_hist)
        self.assertGreaterEqual(same, 0.7 * (WRITES + READS), (run, theirs))

    def test_flags_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/biolatency"):
            self.skipTest("libbpf-tools not installed")
        with LoopDev() as dev:
            twin = start_twin(["/usr/sbin/biolatency", "-D", "-F", "-d", dev.name], "Tracing")
            try:
                run = run_tool(["biolatency", "-D", "-F", "-d", dev.name], lambda: self.io(dev), settle=0.5)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours = {key: total(b) for (_, key), b in text_hists(run.lines).items()}
        # The twin separates the key's fields with a tab.
        twin_keys = {key.replace("\t", ", "): total(b) for (_, key), b in text_hists(theirs.lines).items()}
        self.assertEqual(ours, twin_keys, (run, theirs))
        self.assertEqual(sum(ours.values()), WRITES + READS, run)


if __name__ == "__main__":
    unittest.main()
