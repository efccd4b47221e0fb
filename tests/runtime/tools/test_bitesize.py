"""bitesize on direct I/O of known sizes to a loop device the test makes:
dd's 4 KiB writes fill the 4 -> 7 KiB bucket of comm dd, this Python
process's 64 KiB reads the 64 -> 127 bucket of its comm, -c keeps one comm,
and libbpf-tools' bitesize counts the same."""
import os
import unittest

from blockio import LoopDev, run_counted
from histrun import json_hists, text_hists
from toolrun import mount_tracefs, run_tool, start_twin

DD_WRITES, PY_READS = 12, 5
PY_COMM = open("/proc/self/comm").read().strip()


class BitesizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def io(self, dev):
        dev.dd(write=True, bs=4096, count=DD_WRITES)
        dev.random_io([10, 30, 50, 70, 90][:PY_READS], bs=65536)

    @staticmethod
    def nonzero(buckets):
        return [(lo, hi, c) for lo, hi, c in buckets if c]

    def test_sizes_per_comm(self):
        with LoopDev() as dev:
            run = run_tool(["bitesize", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        self.assertEqual({k: self.nonzero(v) for k, v in hists.items()},
                         {("Kbytes", "comm = dd"): [(4, 8, DD_WRITES)],
                          ("Kbytes", "comm = " + PY_COMM): [(64, 128, PY_READS)]}, run)

    def test_comm_filter_and_json(self):
        with LoopDev() as dev:
            run = run_tool(["-f", "json", "bitesize", "-c", "dd", "-d", dev.name], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        hists = json_hists(run)
        self.assertEqual(len(hists), 1, run)
        (name, key), buckets = next(iter(hists.items()))
        self.assertEqual(name, "@Kbytes")
        self.assertIn("dd", key)
        self.assertEqual(self.nonzero(buckets), [(4, 8, DD_WRITES)], run)

    def test_intervals(self):
        with LoopDev() as dev:
            run = run_counted(["bitesize", "-T", "-d", dev.name, "1", "2"], lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        stamps = [l for l in run.lines if len(l) == 8 and l[2] == ":" and l[5] == ":"]
        self.assertEqual(len(stamps), 2, run)
        got = sum(c for v in text_hists(run.lines).values() for _, _, c in v)
        self.assertEqual(got, DD_WRITES + PY_READS, run)

    def test_same_numbers_as_libbpf_tools(self):
        if not os.path.exists("/usr/sbin/bitesize"):
            self.skipTest("libbpf-tools not installed")
        with LoopDev() as dev:
            twin = start_twin(["/usr/sbin/bitesize", "-d", dev.name], "Tracing")
            try:
                run = run_tool(["bitesize", "-d", dev.name], lambda: self.io(dev), settle=0.5)
            finally:
                twin.stop()
            theirs = twin.finish()
        ours = {k.replace("comm = ", ""): self.nonzero(v) for (_, k), v in text_hists(run.lines).items()}
        # The twin heads each table "Process Name = COMM".
        twin_named = {k.replace("Process Name = ", ""): self.nonzero(v)
                      for (_, k), v in text_hists(theirs.lines).items()}
        self.assertEqual(ours, twin_named, (run, theirs))
        self.assertEqual(ours["dd"], [(4, 8, DD_WRITES)])


if __name__ == "__main__":
    unittest.main()
