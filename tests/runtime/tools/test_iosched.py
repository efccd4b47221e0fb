"""iosched on two loop devices the test makes, one under mq-deadline and
one under kyber: each scheduler's histogram counts the requests issued to
its disk, and a disk without a scheduler counts nothing."""
import unittest

from blockio import LoopDev
from histrun import json_hists, text_hists, total
from toolrun import mount_tracefs, run_tool


class IoschedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_per_scheduler_and_disk(self):
        with LoopDev(scheduler="mq-deadline") as a, LoopDev(scheduler="kyber") as b, LoopDev() as plain:
            def io():
                a.dd(write=True, count=15)
                b.dd(write=True, count=9)
                b.dd(write=False, count=4, seek=100)
                plain.dd(write=True, count=5)
            run = run_tool(["iosched", "-D"], io)
            names = (a.name, b.name, plain.name)
        self.assertEqual(run.rc, 0, run)
        hists = {key: total(v) for (unit, key), v in text_hists(run.lines).items() if unit == "usecs"}
        self.assertEqual(hists.get("sched = mq-deadline, disk = " + names[0]), 15, run)
        self.assertEqual(hists.get("sched = kyber, disk = " + names[1]), 13, run)
        self.assertFalse([k for k in hists if k.endswith("disk = " + names[2])], run)

    def test_one_disk_json(self):
        with LoopDev(scheduler="kyber") as dev:
            run = run_tool(["-f", "json", "iosched", "-m", "-d", dev.name], lambda: dev.dd(write=True, count=11))
        self.assertEqual(run.rc, 0, run)
        hists = json_hists(run)
        self.assertEqual(len(hists), 1, run)
        (name, key), buckets = next(iter(hists.items()))
        self.assertEqual(name, "@msecs")
        self.assertIn("kyber", key)
        self.assertEqual(total(buckets), 11, run)


if __name__ == "__main__":
    unittest.main()
