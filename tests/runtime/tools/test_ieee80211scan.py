"""ieee80211scan needs the cfg80211 tracepoints, which kernels without
wireless support (like the test kernel) lack: then the tool says so in one
line and exits 1."""
import os
import subprocess
import unittest

from toolrun import BPFSCOPE, mount_tracefs


class Ieee80211scanTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_one_line_without_cfg80211(self):
        if os.path.exists("/sys/kernel/tracing/events/cfg80211"):
            self.skipTest("this kernel has cfg80211 tracepoints")
        r = subprocess.run([BPFSCOPE, "ieee80211scan"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^ieee80211scan: Probe has no valid attach points: tracepoint:cfg80211:")
        r = subprocess.run([BPFSCOPE, "tools"], capture_output=True, text=True, timeout=30)
        line = [l for l in r.stdout.splitlines() if l.startswith("ieee80211scan ")]
        self.assertEqual(len(line), 1, r.stdout)
        self.assertRegex(line[0], r"unavailable: Probe has no valid attach points: tracepoint:cfg80211:")

    def test_help(self):
        r = subprocess.run([BPFSCOPE, "ieee80211scan", "-h"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r)
        self.assertIn("cfg80211", r.stdout)


if __name__ == "__main__":
    unittest.main()
