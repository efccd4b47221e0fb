"""The device tools (nvmelatency, scsilatency, scsiresult, mdflush) need a
driver this test kernel lacks (no NVMe, SCSI or md): there each says why in
one line and exits 1. Where the driver and a device exist, each is run on
direct reads (or a flush) of that device and its output checked."""
import glob
import os
import re
import subprocess
import unittest

from histrun import text_hists, total
from toolrun import BPFSCOPE, mount_tracefs, run_tool

EVENTS = "/sys/kernel/tracing/events"


def has_kernel_symbol(name):
    with open("/proc/kallsyms") as f:
        return any(line.split()[2] == name for line in f if len(line.split()) >= 3)


def first(pattern):
    found = sorted(glob.glob(pattern))
    return found[0] if found else None


def direct_reads(path, n=10):
    subprocess.run(["dd", "if=" + path, "of=/dev/null", "iflag=direct", "bs=4096", "count=%d" % n, "status=none"],
                   check=True)


class DeviceToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def one_line_failure(self, tool, reason):
        r = subprocess.run([BPFSCOPE, tool], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^%s: %s" % (tool, reason))
        self.assertNotRegex(lines[0], r"(?i)verifier|permission|(failed|unable|cannot) to attach|attaching")
        r = subprocess.run([BPFSCOPE, "tools"], capture_output=True, text=True, timeout=60)
        line = [l for l in r.stdout.splitlines() if l.startswith(tool + " ")]
        self.assertEqual(len(line), 1, r.stdout)
        self.assertRegex(line[0], r"unavailable: %s" % reason)

    def test_nvmelatency(self):
        if not os.path.exists(EVENTS + "/nvme"):
            self.one_line_failure("nvmelatency", r"Probe has no valid attach points: rawtracepoint:nvme_\* matches nothing")
            return
        disk = first("/dev/nvme[0-9]n[0-9]")
        if not disk:
            self.skipTest("nvme events but no NVMe namespace")
        name = os.path.basename(disk)
        run = run_tool(["nvmelatency", "-d", name], lambda: direct_reads(disk))
        self.assertEqual(run.rc, 0, run)
        hists = text_hists(run.lines)
        self.assertGreaterEqual(total(hists[("usecs", "disk = %s, cmd = read" % name)]), 10, run)

    def test_scsilatency_and_scsiresult(self):
        if not os.path.exists(EVENTS + "/scsi"):
            self.one_line_failure("scsilatency", r"Probe has no valid attach points: tracepoint:scsi:scsi_dispatch_cmd_\* matches nothing")
            self.one_line_failure("scsiresult", r"No matches for tracepoint scsi:scsi_dispatch_cmd_done\.")
            return
        disk = first("/dev/sd[a-z]")
        if not disk:
            self.skipTest("scsi events but no SCSI disk")
        run = run_tool(["scsilatency"], lambda: direct_reads(disk))
        self.assertEqual(run.rc, 0, run)
        reads = sum(total(v) for (unit, key), v in text_hists(run.lines).items() if re.search(r"cmd = READ_(10|16)", key))
        self.assertGreaterEqual(reads, 10, run)
        run = run_tool(["scsiresult"], lambda: direct_reads(disk))
        self.assertEqual(run.rc, 0, run)
        good = [l for l in run.lines if "host = DID_OK, status = SAM_STAT_GOOD" in l]
        self.assertTrue(good, run)
        self.assertGreaterEqual(int(good[0].rsplit(":", 1)[1]), 10, run)

    def test_mdflush(self):
        if not has_kernel_symbol("md_flush_request"):
            self.one_line_failure("mdflush", r"Failed to resolve kernel symbol: md_flush_request")
            return
        md = first("/dev/md[0-9]*")
        if not md:
            self.skipTest("md driver but no md device")

        def flush():
            # fsync of a block device sends it a flush.
            fd = os.open(md, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        run = run_tool(["mdflush"], flush)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[1].split(), ["TIME", "PID", "COMM", "DEVICE"])
        mine = [l.split() for l in run.lines[2:] if l.split()[1:2] == [str(os.getpid())]]
        self.assertTrue(mine, run)
        self.assertEqual(mine[0][3], os.path.basename(md))

    def test_help(self):
        for tool, word in (("nvmelatency", "nvme"), ("scsilatency", "scsi"), ("scsiresult", "scsi"),
                           ("mdflush", "md")):
            with self.subTest(tool=tool):
                r = subprocess.run([BPFSCOPE, tool, "-h"], capture_output=True, text=True, timeout=30)
                self.assertEqual(r.returncode, 0, r)
                self.assertIn("USAGE: " + tool, r.stdout)
                self.assertIn(word, r.stdout)


if __name__ == "__main__":
    unittest.main()
