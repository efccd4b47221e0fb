"""seeksize on direct reads at scattered offsets of a loop device the test
makes: the histogram holds exactly the log2 buckets of the distances, in
sectors, between each read and the end of the one before."""
import unittest

from blockio import LoopDev, scattered
from histrun import json_hists, text_hists
from toolrun import mount_tracefs, run_tool

COMM = open("/proc/self/comm").read().strip()


def bucket(v):
    if v < 2:
        return (0, 2)
    lo = 1 << (v.bit_length() - 1)
    return (lo, 2 * lo)


def expected(offsets, sectors_per_io=8):
    out = {}
    for prev, cur in zip(offsets, offsets[1:]):
        end = prev * sectors_per_io + sectors_per_io
        b = bucket(abs(cur * sectors_per_io - end))
        out[b] = out.get(b, 0) + 1
    return sorted((lo, hi, c) for (lo, hi), c in out.items())


class SeeksizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_distances(self):
        # Sequential runs (distance 0) and jumps of every size.
        offsets = list(range(0, 10)) + scattered(25, 16000, seed=3) + list(range(500, 505))
        with LoopDev() as dev:
            run = run_tool(["seeksize", "-d", dev.name], lambda: dev.random_io(offsets))
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        self.assertEqual(list(hists), [("sectors", "comm = " + COMM)], run)
        got = [b for b in hists[("sectors", "comm = " + COMM)] if b[2]]
        self.assertEqual(got, expected(offsets), run)

    def test_json_and_comm(self):
        with LoopDev() as dev:
            def io():
                dev.dd(write=True, count=20)
                dev.dd(write=False, count=1, seek=4096)
            run = run_tool(["-f", "json", "seeksize", "-d", dev.name], io)
        self.assertEqual(run.rc, 0, run)
        hists = json_hists(run)
        self.assertEqual(len(hists), 1, run)
        (name, key), buckets = next(iter(hists.items()))
        self.assertEqual(name, "@sectors")
        self.assertIn("dd", key)
        # 19 sequential writes, then a read 4096 - 20 blocks further on.
        self.assertEqual([b for b in buckets if b[2]], [(0, 1, 19), (16384, 32768, 1)], run)


if __name__ == "__main__":
    unittest.main()
