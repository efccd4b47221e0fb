"""The cookbook's disk entries (docs/one-liners.md, topic disk), each command
run as written (with -f json, for the numbers) around direct I/O of known
sizes and counts on a loop device the test makes; the numbers must hold that
I/O. The one-liners trace every disk, so a count is at least the test's, and
where the kernel's own counter of the device (/sys/block/loopN/stat) says
how many requests it completed, that is what the test checks."""
import errno
import subprocess
import unittest

from blockio import Completed, LoopDev
from cookbook import entries, hist_total, keyed, run_json
from toolrun import BPFSCOPE, mount_tracefs

E = entries()
N = 24  # direct writes per run


class CookbookDiskTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def writes(self, dev, bs=4096, n=N):
        """n direct writes of bs bytes at scattered offsets (no two merge);
        checks that the device completed n write requests."""
        with Completed(dev) as c:
            dev.random_io([2 * i for i in range(n)], bs=bs, write=True)
        self.assertEqual(c.writes, n, c)

    def both(self, eid):
        e = E[eid]
        return [c for c in (e["bcc"], e["bpftrace"]) if c]

    def test_disk_1(self):
        # funccount's table and the map: block_rq_issue and _complete at
        # least once per write.
        with LoopDev(mb=8) as dev:
            r = run_json(E["disk-1"]["bpftrace"], lambda: self.writes(dev))
            for ev in ("block_rq_issue", "block_rq_complete", "block_io_start", "block_io_done"):
                self.assertGreaterEqual(r.maps["@"]["tracepoint:block:" + ev], N, (ev, r))
            r = run_json(E["disk-1"]["bcc"], lambda: self.writes(dev))
            for ev in ("block_rq_issue", "block_rq_complete"):
                self.assertGreaterEqual(r.counts["tracepoint:block:" + ev], N, (ev, r))

    def test_disk_2(self):
        # 16 KiB writes: the [16K, 32K) bucket holds them.
        with LoopDev(mb=8) as dev:
            r = run_json(E["disk-2"]["bpftrace"], lambda: self.writes(dev, bs=16384))
            self.assertGreaterEqual(hist_total(r.maps["@bytes"], 16384, 32767), N, r)
            r = run_json(E["disk-2"]["bcc"], lambda: self.writes(dev, bs=16384))
            self.assertGreaterEqual(hist_total(r.hists["@args->bytes"], 16384, 32767), N, r)

    def test_disk_3(self):
        # User stacks of the requests: the writes come from this process's
        # pwritev calls, at least N counted.
        with LoopDev(mb=8) as dev:
            r = run_json(E["disk-3"]["bpftrace"], lambda: self.writes(dev))
            self.assertGreaterEqual(sum(r.maps["@"].values()), N, r)
            r = run_json(E["disk-3"]["bcc"], lambda: self.writes(dev))
            self.assertGreaterEqual(sum(sum(m.values()) for m in r.maps.values() if isinstance(m, dict)), N, r)

    def test_disk_4(self):
        # Direct writes are WS (write, sync).
        with LoopDev(mb=8) as dev:
            r = run_json(E["disk-4"]["bpftrace"], lambda: self.writes(dev))
            self.assertGreaterEqual(r.maps["@"]["WS"], N, r)
            r = run_json(E["disk-4"]["bcc"], lambda: self.writes(dev))
            self.assertGreaterEqual(r.counts["WS"], N, r)

    def test_disk_5(self):
        with LoopDev(mb=8) as dev:
            r = run_json(E["disk-5"]["bpftrace"], lambda: self.writes(dev, bs=8192))
            self.assertGreaterEqual(r.maps["@"]["WS"], N * 8192, r)

    def assertLostOnlyWhatWasMissed(self, mine, failed, r):
        # One line per failed request of this device, and none lost but for
        # the firings the kernel reported skipped. The kernel's count is of
        # every skipped firing of block_rq_complete, on any disk (a CI
        # neighbour's BPF program active on that CPU when the root disk
        # completes a request): those are not all this device's.
        self.assertLessEqual(len(mine), len(failed), r)
        self.assertGreaterEqual(len(mine) + r.run.missed(), len(failed), r)

    def test_disk_6(self):
        # Writes past the tmpfs under the loop device's file fail (ENOSPC):
        # one line per failed request, with the device and -28.
        e = E["disk-6"]
        with LoopDev(mb=8, full_after_kb=1024) as dev:
            maj, mnr = dev.devno()
            failed = []
            r = run_json(e["bpftrace"], lambda: failed.extend(dev.failed_io(range(268), bs=4096, write=True)))
        self.assertGreaterEqual(len(failed), 12)
        self.assertTrue(all(err == errno.ENOSPC for _, err in failed), failed)
        mine = [l for l in r.printf if l.startswith("dev %d type " % ((maj << 20) | mnr))]
        self.assertLostOnlyWhatWasMissed(mine, failed, r)
        self.assertEqual(mine[0], "dev %d type WS error -28\n" % ((maj << 20) | mnr), r)

    def test_disk_6_trace(self):
        # bcc's form: the trace tool, one event per failed request.
        tools = subprocess.run([BPFSCOPE, "tools"], capture_output=True, text=True, timeout=60).stdout
        if not any(l.split()[:1] == ["trace"] for l in tools.splitlines()):
            self.skipTest("no trace tool in this build")
        with LoopDev(mb=8, full_after_kb=1024) as dev:
            devno = "%d" % ((dev.devno()[0] << 20) | dev.devno()[1])
            failed = []
            r = run_json(E["disk-6"]["bcc"], lambda: failed.extend(dev.failed_io(range(268), bs=4096, write=True)))
        self.assertGreaterEqual(len(failed), 12)
        mine = [ev["msg"] for ev in r.events if ev["msg"].startswith("dev %s type " % devno)]
        self.assertLostOnlyWhatWasMissed(mine, failed, r)
        self.assertEqual(mine[0], "dev %s type WS error -28" % devno, r)

    def test_disk_7(self):
        # Buffered writes of a file on the loop device's file system, then
        # fsync: writeback submits its requests under a plug.
        import os
        import subprocess
        import tempfile
        with LoopDev(mb=16) as dev:
            subprocess.run(["mkfs.ext4", "-q", dev.path], check=True)
            mnt = tempfile.mkdtemp(prefix="bpfscope-cookbook-")
            subprocess.run(["mount", dev.path, mnt], check=True)
            try:
                def work():
                    with open(os.path.join(mnt, "f"), "wb") as f:
                        for _ in range(8):
                            f.write(b"p" * (256 << 10))
                        f.flush()
                        os.fsync(f.fileno())
                r = run_json(E["disk-7"]["bpftrace"], work)
            finally:
                subprocess.run(["umount", mnt], check=True)
                os.rmdir(mnt)
        self.assertGreaterEqual(hist_total(r.maps["@plug_ns"]), 1, r)

    def test_disk_8(self):
        # One lhist bucket per CPU: the buckets add up to the requests.
        with LoopDev(mb=8) as dev:
            r = run_json(E["disk-8"]["bpftrace"], lambda: self.writes(dev))
            self.assertGreaterEqual(hist_total(r.maps["@swqueues"]), N, r)
            r = run_json(E["disk-8"]["bcc"], lambda: self.writes(dev))
            self.assertGreaterEqual(sum(r.counts.values()), N, r)


if __name__ == "__main__":
    unittest.main()
