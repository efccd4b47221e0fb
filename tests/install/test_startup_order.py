"""The release link's start-up order is current (CMakeLists.txt,
BPFSCOPE_ORDER_TEXT; BENCHMARKS.md, "Start and memory against ply").

cmake/startup-order.txt lists the functions a start runs, which ld.lld
places together: a start then keeps about six 64 KiB windows of text
resident. A function renamed or added on the start's path and left out of
the list lands anywhere in 2.4 MB of text and brings its own window with
it, which nothing else would notice. This test runs `-q -e 'BEGIN { exit(); }'`
under callgrind (bench/ply.py's command) and fails when the functions it
runs that the list lacks come to more than UNLISTED_BYTES: the fix is to
regenerate the list with bench/startup_order.py.

Needs the release build ctest gives in $BPFSCOPE_BUILD, valgrind, root.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from startup_order import functions  # noqa: E402

BUILD = os.path.abspath(os.environ.get("BPFSCOPE_BUILD", os.path.join(ROOT, "build-release")))
ORDER = os.path.join(ROOT, "cmake", "startup-order.txt")
UNLISTED_BYTES = 4096


class StartupOrderTest(unittest.TestCase):
    def test_a_start_runs_listed_functions(self):
        binary = os.path.realpath(os.path.join(BUILD, "bpfscope"))
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "cg")
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}.%p",
                            binary, "-q", "-e", "BEGIN { exit(); }"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300, check=True)
            ran = set()
            for name in os.listdir(tmp):
                ran.update(functions(os.path.join(tmp, name), binary))
        listed = set(open(ORDER).read().split())
        sizes = {}
        nm = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True)
        for line in nm.stdout.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "tTwW":
                sizes[f[3]] = int(f[1], 16)
        self.assertGreater(len(ran & listed), 300, "callgrind saw too few of the listed functions run")
        unlisted = sorted(((sizes[n], n) for n in ran - listed if n in sizes), reverse=True)
        total = sum(s for s, _ in unlisted)
        self.assertLessEqual(
            total, UNLISTED_BYTES,
            "%d bytes of functions that a start runs are not in cmake/startup-order.txt; regenerate it "
            "(bench/startup_order.py build-release/bpfscope). Largest: %s" %
            (total, ", ".join("%s (%d)" % (n, s) for s, n in unlisted[:8])))


if __name__ == "__main__":
    unittest.main()
