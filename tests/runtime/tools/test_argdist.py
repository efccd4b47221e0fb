"""argdist: bcc's probe specifiers spliced into the script. Histograms (-H)
and counts (-C) of block_rq_issue fields for direct I/O of known sizes to a
loop device the test makes (filtered to that device by the specifier's
filter), a uprobe on libc's usleep() called a known number of times by a
known process, intervals, JSON, and errors located in the specifier."""
import ctypes
import os
import re
import subprocess
import sys
import unittest

from blockio import LoopDev, run_counted
from toolrun import BPFSCOPE, mount_tracefs, run_tool

ISSUE = "t:block:block_rq_issue()"


def on(dev):
    """The filter that keeps the loop device's requests (dev_t is MAJOR << 20 | MINOR)."""
    maj, mnr = dev.devno()
    return "args->dev==%d" % ((maj << 20) | mnr)


def last_hist(lines, unit):
    """{low bucket bound: count} of the last histogram headed by `unit`."""
    starts = [i for i, l in enumerate(lines) if re.match(r"^ +%s +: count +distribution$" % re.escape(unit), l)]
    assert starts, lines
    out = {}
    for l in lines[starts[-1] + 1:]:
        m = re.match(r"^ +(\d+) -> (\d+) +: (\d+) +\|", l)
        if not m:
            break
        out[int(m.group(1))] = int(m.group(3))
    return out


def last_counts(lines, label):
    """{event: count} of the last -C table under `label`."""
    starts = [i for i, l in enumerate(lines) if l == label]
    assert starts, lines
    assert lines[starts[-1] + 1] == "\tCOUNT      EVENT", lines
    out = {}
    for l in lines[starts[-1] + 2:]:
        m = re.match(r"^\t(\d+) +(.*)$", l)
        if not m:
            break
        out[m.group(2)] = int(m.group(1))
    return out


class ArgdistTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_histogram_and_count_of_direct_writes(self):
        # 25 writes of 4 KiB: 25 in the 4096 bucket, 25 WS (write, sync).
        with LoopDev() as dev:
            spec_h = "%s:u32:args->bytes:%s" % (ISSUE, on(dev))
            spec_c = "%s:char*:args->rwbs:%s" % (ISSUE, on(dev))
            run = run_tool(["argdist", "-c", "-H", spec_h, "-C", spec_c],
                           lambda: dev.dd(write=True, bs=4096, count=25), settle=1.5)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing... Output every 1 secs. Hit Ctrl-C to end", run)
        self.assertRegex(run.lines[1], r"^\[\d\d:\d\d:\d\d\]$", run)
        self.assertEqual(run.lines[2], spec_c, run)
        hist = last_hist(run.lines, "args->bytes")
        self.assertEqual({k: v for k, v in hist.items() if v}, {4096: 25}, run)
        self.assertEqual(last_counts(run.lines, spec_c), {"args->rwbs = WS": 25}, run)

    def test_filter_several_specifiers_and_labels(self):
        # 10 writes of 4 KiB and 6 of 16 KiB, then 4 reads of 8 KiB: the
        # filter keeps the big writes; one -C counts by direction, another by
        # size and direction.
        with LoopDev() as dev:
            f = on(dev)
            args = ["argdist", "-c",
                    "-H", "%s:u32:args->bytes:%s && args->bytes>4096#big I/O" % (ISSUE, f),
                    "-C", "%s:char*:args->rwbs:%s#by type" % (ISSUE, f),
                    "-C", "%s:u32,char*:args->bytes,args->rwbs:%s" % (ISSUE, f)]

            def io():
                dev.dd(write=True, bs=4096, count=10)
                dev.dd(write=True, bs=16384, count=6)
                dev.dd(write=False, bs=8192, count=4)
            run = run_tool(args, io, settle=1.5)
        self.assertEqual(run.rc, 0, run)
        hist = last_hist(run.lines, "big I/O")
        self.assertEqual({k: v for k, v in hist.items() if v}, {8192: 4, 16384: 6}, run)
        self.assertEqual(last_counts(run.lines, "by type"), {"args->rwbs = WS": 16, "args->rwbs = RS": 4}, run)
        spec = args[-1]
        self.assertEqual(last_counts(run.lines, spec),
                         {"args->bytes = 4096, args->rwbs = WS": 10, "args->bytes = 16384, args->rwbs = WS": 6,
                          "args->bytes = 8192, args->rwbs = RS": 4}, run)
        # Busiest first.
        i = max(k for k, l in enumerate(run.lines) if l == spec)
        self.assertEqual(run.lines[i + 2], "\t10         args->bytes = 4096, args->rwbs = WS", run)

    def test_intervals_and_count_of_outputs(self):
        # -i 1 -n 2: two summaries a second apart, then it exits by itself;
        # without -c each interval holds its own I/O only.
        with LoopDev() as dev:
            spec = "%s:u32:args->bytes:%s" % (ISSUE, on(dev))

            def io():
                dev.dd(write=True, bs=4096, count=8)
            run = run_counted(["argdist", "-i", "1", "-n", "2", "-C", spec], io, timeout=10)
        self.assertEqual(run.rc, 0, run)
        stamps = [l for l in run.lines if re.match(r"^\[\d\d:\d\d:\d\d\]$", l)]
        self.assertEqual(len(stamps), 2, run)
        total = sum(int(m.group(1)) for m in (re.match(r"^\t(\d+) +args->bytes = 4096$", l) for l in run.lines) if m)
        self.assertEqual(total, 8, run)

    def test_uprobe_on_libc_with_pid(self):
        # A child calls usleep(4321) 7 times (and usleep(1000) twice);
        # this process calls usleep(4321) too, but -p keeps the child only.
        code = ("import ctypes, time; c = ctypes.CDLL('libc.so.6'); time.sleep(1.0); "
                "[c.usleep(4321) for _ in range(7)]; [c.usleep(1000) for _ in range(2)]")
        child = subprocess.Popen([sys.executable, "-c", code])
        try:
            spec = "p:c:usleep(unsigned int usec):u32:usec:usec==4321"
            def calls():
                libc = ctypes.CDLL("libc.so.6")
                for _ in range(3):
                    libc.usleep(4321)
                child.wait(timeout=10)

            run = run_tool(["argdist", "-c", "-p", str(child.pid), "-C", spec,
                            "-H", "p:c:usleep(unsigned int usec):u32:usec"], calls, settle=1.5)
        finally:
            child.kill()
            child.wait()
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(last_counts(run.lines, spec), {"usec = 4321": 7}, run)
        hist = last_hist(run.lines, "usec")
        self.assertEqual({k: v for k, v in hist.items() if v}, {512: 2, 4096: 7}, run)

    def test_json(self):
        with LoopDev() as dev:
            f = on(dev)
            run = run_tool(["-f", "json", "argdist", "-c", "-H", "%s:u32:args->bytes:%s" % (ISSUE, f),
                            "-C", "%s:char*:args->rwbs:%s" % (ISSUE, f)],
                           lambda: dev.dd(write=True, bs=4096, count=5), settle=1.5)
        self.assertEqual(run.rc, 0, run)
        tables = run.json("table")
        self.assertEqual(tables[-1]["data"], [{"count": 5, "event": {"args->rwbs": "WS"}}], run)
        hists = run.json("hist")
        self.assertEqual(hists[-1]["data"], {"@args->bytes": [{"min": 4096, "max": 8191, "count": 5}]}, run)

    def argdist(self, *args):
        return subprocess.run([BPFSCOPE, "argdist"] + list(args), capture_output=True, text=True, timeout=30)

    def test_errors_point_into_the_specifier(self):
        p = self.argdist("-H", "%s:u32:args->bytez" % ISSUE)
        self.assertEqual(p.returncode, 1, p)
        self.assertEqual(p.stderr.splitlines(), [
            "argdist: -H:1:30-41: ERROR: Can't find field 'bytez' in tracepoint block:block_rq_issue",
            "%s:u32:args->bytez" % ISSUE,
            " " * 29 + "~" * 11], p)
        p = self.argdist("-C", "%s:u32:args->bytes +" % ISSUE)
        self.assertEqual(p.returncode, 1, p)
        self.assertRegex(p.stderr, r"^argdist: -C:1:\d+-\d+: ERROR: unexpected end of file", p)
        p = self.argdist("-C", "p:c:usleep(unsigned int usec):u32:usec:$retval > 0")
        self.assertEqual(p.returncode, 1, p)
        self.assertIn("-C:1:40-47: ERROR: $retval is only known in a return probe (r:)", p.stderr, p)

    def test_bad_specifiers_and_kernel_functions(self):
        p = self.argdist("-C", "x:foo")
        self.assertEqual(p.returncode, 2, p)
        self.assertRegex(p.stderr, r"^argdist: -C: invalid specifier \"x:foo\": ", p)
        self.assertIn("USAGE: argdist", p.stderr, p)
        p = self.argdist("-H", "%s:u32,u32:args->bytes" % ISSUE)
        self.assertEqual(p.returncode, 2, p)
        self.assertIn("2 types for 1 expression", p.stderr, p)
        # p:: is a kernel function: kprobes, which this kernel lacks, as funccount says.
        p = self.argdist("-C", "p::do_sys_openat2(int dfd):int:dfd")
        self.assertNotEqual(p.returncode, 0, p)
        self.assertRegex(p.stderr, r"^argdist: Unable to attach probe: kprobe:do_sys_openat2: kprobes are not available", p)
        p = self.argdist()
        self.assertEqual(p.returncode, 2, p)
        self.assertEqual(p.stdout, "argdist: at least one specifier is required (-H or -C)\n", p)

    def test_expr_option_of_a_tool_file(self):
        # The general mechanism under argdist's specifiers: an `expr` option
        # is compiled where the script says getopt("NAME").
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False) as f:
            f.write("// tool: exprdemo\n// about: demo\n// option: -k --key EXPR (expr) Key\n"
                    "BEGIN { printf(\"%d\\n\", getopt(\"key\")); exit(); }\n")
        try:
            p = subprocess.run([BPFSCOPE, f.name, "-k", "6 * 7"], capture_output=True, text=True, timeout=30)
            self.assertEqual((p.returncode, p.stdout), (0, "42\n"), p)
            p = subprocess.run([BPFSCOPE, f.name, "-k", "6 * comm"], capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 1, p)
            self.assertRegex(p.stderr, r"^exprdemo: -k:1:1-9: ERROR: ", p)
        finally:
            os.unlink(f.name)

    def test_help(self):
        p = self.argdist("-h")
        self.assertEqual(p.returncode, 0, p)
        self.assertIn("-H, --histogram=SPECIFIER", p.stdout)
        self.assertIn("{p,r,t,u}:{[library],category}:function(signature)", p.stdout)
        p = subprocess.run([BPFSCOPE, "tools"], capture_output=True, text=True, timeout=120)
        self.assertRegex(p.stdout, r"(?m)^argdist +Trace a function.* ok$")


if __name__ == "__main__":
    unittest.main()
