"""Flame graphs (--flamegraph FILE.svg, bpfscope render) of real runs on work
of known shape (tests/runtime/helpers/cpu_work.c), opened in headless
Chromium: the spinning function is in the CPU graph, the sleeping one in the
off-CPU graph, the pipe reader and its waker meet at "--" in the off-wake
graph; a click zooms a frame to the full width, the search highlights
matches and says their share, reset restores the graph.

The browser checks skip when chromium is missing (scripts/test.sh installs
it). Set FLAMEGRAPH_SHOTS=DIR to keep the screenshots (cpu.png,
offwake.png) there."""
import os
import re
import subprocess
import tempfile
import unittest

import browser
from cpuwork import Work
from toolrun import BPFSCOPE, mount_tracefs, run_tool

# The browser side of the checks: every frame's name, zoom by a click on the
# frame named ZOOM, search SEARCH, then reset.
CHECKS = r"""
  var frames = fg.frames();
  var svg = document.getElementById("fg-svg");
  var full = +svg.getAttribute("data-plot-width");
  var out = {full: full, count: frames.length, names: {},
             title: document.getElementById("fg-title").textContent,
             subtitle: document.getElementById("fg-subtitle").textContent};
  frames.forEach(function (f) { out.names[f.name] = (out.names[f.name] || 0) + 1; });
  var z = frames.filter(function (f) { return f.name === ZOOM; })
                .sort(function (a, b) { return b.w - a.w; })[0];
  if (!z) return out;
  out.zoomTitle = z.title;
  out.zoomFill = z.fill;
  out.before = +z.rect.getAttribute("width");
  z.rect.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  out.after = +z.rect.getAttribute("width");
  out.afterX = +z.rect.getAttribute("x");
  out.hidden = frames.filter(function (f) { return f.g.style.display === "none"; }).length;
  out.label = z.text ? z.text.textContent : "";
  out.resetShown = document.getElementById("fg-reset").style.display !== "none";
  out.share = fg.search(SEARCH);
  out.matched = document.getElementById("fg-matched").textContent;
  out.highlighted = frames.filter(function (f) {
    return f.rect.getAttribute("fill") === "#e600e6"; }).map(function (f) { return f.name; });
  out.searchPercents = frames.filter(function (f) { return new RegExp(SEARCH).test(f.name); })
                             .map(function (f) { return f.title; });
  document.getElementById("fg-reset").dispatchEvent(new MouseEvent("click", {bubbles: true}));
  out.reset = +z.rect.getAttribute("width");
  out.hiddenAfterReset = frames.filter(function (f) { return f.g.style.display === "none"; }).length;
  fg.search(null);
  out.highlightedAfterClear = frames.filter(function (f) {
    return f.rect.getAttribute("fill") === "#e600e6"; }).length;
  // Off-wake: frames stacked on a blocked frame named BLOCKED, at its x.
  var b = frames.filter(function (f) { return f.name === BLOCKED; })[0];
  if (b) {
    var above = function (f) { return f.y < b.y && f.x >= b.x - 0.01 && f.x + f.w <= b.x + b.w + 0.01; };
    out.aboveBlocked = frames.filter(above).sort(function (p, q) { return q.y - p.y; })
                             .map(function (f) { return f.name; });
  }
  return out;
"""


def checks(zoom, search, blocked=""):
    js = CHECKS.replace("ZOOM", '"%s"' % zoom).replace("SEARCH", '"%s"' % search)
    return js.replace("BLOCKED", '"%s"' % blocked)


def percent(title):
    return float(re.search(r", ([0-9.]+)%\)$", title).group(1))


def shots_dir():
    d = os.environ.get("FLAMEGRAPH_SHOTS")
    if d:
        os.makedirs(d, exist_ok=True)
    return d


class FlameGraphRunTest(unittest.TestCase):
    """The graphs of tools and scripts on the real kernel."""

    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="fg-test-")
        self.svg = os.path.join(self.dir.name, "graph.svg")

    def tearDown(self):
        self.dir.cleanup()

    def read_svg(self):
        with open(self.svg) as f:
            return f.read()

    def assert_interactive(self, r, zoom):
        """A click zoomed `zoom` to the full width and reset put it back."""
        self.assertNotIn("error", r, r)
        self.assertLess(r["before"], r["full"] - 1, r)
        self.assertAlmostEqual(r["after"], r["full"], delta=0.01)
        self.assertAlmostEqual(r["afterX"], 10, delta=0.01)
        self.assertTrue(r["resetShown"], r)
        self.assertGreater(r["hidden"], 0, r)
        self.assertTrue(r["label"].startswith(zoom[:3]), r)
        self.assertAlmostEqual(r["reset"], r["before"], delta=0.01)
        self.assertEqual(r["hiddenAfterReset"], 0, r)
        self.assertEqual(r["highlightedAfterClear"], 0, r)

    def test_cpu_graph_of_profile(self):
        # Two functions on CPU, so that a click has somewhere to zoom.
        with Work("spin", 800, "calls", 300000) as w:
            run = run_tool(["profile", "-F", "199", "-p", str(w.pid), "--flamegraph", self.svg], w.run)
        self.assertEqual(run.rc, 0, run)
        # The stacks are drawn, not printed: only the header is left.
        self.assertEqual(run.lines, ["Sampling at 199 Hertz of PID [%d] by user + kernel... Hit Ctrl-C to end."
                                     % w.pid], run)
        svg = self.read_svg()
        self.assertIn(">CPU Flame Graph</text>", svg)
        if not browser.CHROMIUM:
            self.skipTest("chromium not installed")
        r = browser.probe(self.svg, checks("cpu_spin", "cpu_s.in"))
        self.assertIn("cpu_spin", r["names"], r)
        self.assertIn("main", r["names"], r)
        self.assertIn("cpu_work", r["names"], r)
        self.assertRegex(r["subtitle"], r"^[0-9,]+ samples in [0-9,]+ stacks?")
        self.assertRegex(r["zoomTitle"], r"^cpu_spin \([0-9,]+ samples, [0-9.]+%\)$")
        self.assert_interactive(r, "cpu_spin")
        # The search: every cpu_spin frame highlighted, and their share said.
        self.assertEqual(set(r["highlighted"]), {"cpu_spin"}, r)
        expected = sum(percent(t) for t in r["searchPercents"])
        self.assertAlmostEqual(r["share"], expected, delta=0.3)
        self.assertGreater(r["share"], 30, r)
        self.assertIn("cpu_calls", r["names"], r)
        self.assertRegex(r["matched"], r"^Matched: [0-9.]+% \(\d+ frames?\)$")
        self.assertTrue(r["zoomFill"].startswith("#"), r)
        d = shots_dir()
        png = os.path.join(d or self.dir.name, "cpu.png")
        browser.screenshot(self.svg, png)

    def test_offcpu_graph_of_offcputime(self):
        with Work("sleep", 20, 10, "pipe", 15, 10) as w:
            run = run_tool(["offcputime", "-p", str(w.pid), "--flamegraph", self.svg, "--title", "Sleeps & <naps>"],
                           w.run)
        self.assertEqual(run.rc, 0, run)
        svg = self.read_svg()
        self.assertIn(">Sleeps &amp; &lt;naps&gt;</text>", svg)
        if not browser.CHROMIUM:
            self.skipTest("chromium not installed")
        r = browser.probe(self.svg, checks("cpu_sleep", "nanosleep"))
        self.assertEqual(r["title"], "Sleeps & <naps>")
        self.assertIn("cpu_sleep", r["names"], r)
        self.assertIn("do_nanosleep", r["names"], r)
        # Microseconds, about 10 x 20 ms of them in cpu_sleep (test_profile
        # checks offcputime's sums; on a loaded machine a sleep may be missed).
        self.assertRegex(r["zoomTitle"], r"^cpu_sleep \([0-9,]+ us, [0-9.]+%\)$")
        us = int(re.search(r"\(([0-9,]+) us", r["zoomTitle"]).group(1).replace(",", ""))
        self.assertTrue(0.8 * 200000 <= us <= 10 * 40000, r)
        self.assert_interactive(r, "cpu_sleep")
        # The off-CPU palette: blues.
        red, green, blue = (int(r["zoomFill"][i:i + 2], 16) for i in (1, 3, 5))
        self.assertGreater(blue, red + 60, r)
        self.assertGreaterEqual(blue, 200, r)

    def test_offwake_graph_of_offwaketime(self):
        with Work("sleep", 20, 5, "pipe", 15, 12) as w:
            run = run_tool(["offwaketime", "-p", str(w.pid), "--flamegraph", self.svg], w.run)
        self.assertEqual(run.rc, 0, run)
        if not browser.CHROMIUM:
            self.skipTest("chromium not installed")
        r = browser.probe(self.svg, checks("cpu_pipe_wait", "cpu_wake", blocked="cpu_pipe_wait"))
        self.assertEqual(r["title"], "Off-Wake Time Flame Graph")
        for name in ("cpu_pipe_wait", "--", "cpu_wake", "waker_main"):
            self.assertIn(name, r["names"], r)
        self.assert_interactive(r, "cpu_pipe_wait")
        # Above the reader's frame: its kernel frames, "--", then the
        # waker's stack leaf first: the kernel's pipe write, cpu_wake(),
        # waker_main(), and the waker's name on top.
        above = r["aboveBlocked"]
        self.assertIn("--", above, r)
        sep = above.index("--")
        self.assertTrue({"anon_pipe_read", "pipe_read"} & set(above[:sep]), r)
        waker = above[sep + 1:]
        self.assertTrue({"anon_pipe_write", "pipe_write"} & set(waker), r)
        self.assertLess(waker.index("cpu_wake"), waker.index("waker_main"), r)
        self.assertEqual(waker[-1], "cpu_work", r)
        d = shots_dir()
        browser.screenshot(self.svg, os.path.join(d or self.dir.name, "offwake.png"))

    def test_offwaketime_folded(self):
        with Work("pipe", 15, 12) as w:
            run = run_tool(["offwaketime", "-f", "-p", str(w.pid)], w.run)
        self.assertEqual(run.rc, 0, run)
        self.assertIn("Tracing blocked time (us)", run.stderr)
        reader = [l for l in run.lines if ";main;cpu_pipe_wait;" in l]
        self.assertTrue(reader, run)
        for line in run.lines:
            self.assertRegex(line, r"^\S[^;]*;.*;--;.* \d+$")
        for line in reader:
            frames = line.rsplit(" ", 1)[0].split(";")
            sep = frames.index("--")
            self.assertEqual(frames[0], "cpu_work")
            self.assertLess(frames.index("cpu_pipe_wait"), sep)
            waker = frames[sep + 1:]
            # Leaf first: the kernel's pipe write, then cpu_wake() under
            # waker_main(), the waker's name last.
            self.assertIn("cpu_wake", waker, line)
            self.assertLess(waker.index("cpu_wake"), waker.index("waker_main"), line)
            self.assertTrue(any(f.startswith(("anon_pipe_write", "pipe_write")) for f in waker[:waker.index("cpu_wake")]),
                            line)
            self.assertEqual(waker[-1], "cpu_work")
        total = sum(int(l.rsplit(" ", 1)[1]) for l in reader)
        self.assertTrue(11 * 15000 * 0.9 <= total <= 12 * 35000, (total, run))

    def render(self, *args):
        r = subprocess.run([BPFSCOPE, "render"] + list(args), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def record(self, name, args, work):
        """A tool's -f json run saved as a recording."""
        run = run_tool(["-f", "json"] + args, work.run)
        self.assertEqual(run.rc, 0, run)
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write("".join(l + "\n" for l in run.lines))
        return run, path

    def test_tool_recordings_drawn_again(self):
        """A tool's recording prints again as the tool's text (its stacks as
        events, nothing of the @folded map it keeps for drawing), folds as
        the tool's -f folds, and is drawn with the tool's kind and unit."""
        with Work("spin", 600, "pipe", 15, 12) as w:
            run, rec = self.record("offwake.ndjson", ["offwaketime", "-p", str(w.pid)], w)
        events = run.json("event")
        self.assertTrue(any("cpu_pipe_wait" in e["data"]["target_ustack"] for e in events), run)
        drawn = [m for m in run.json("map") if m.get("drawn_only")]
        self.assertEqual([(m["graph"], m["unit"], list(m["data"])) for m in drawn], [("offwake", "us", ["@folded"])])
        text = self.render(rec)
        self.assertEqual(text.stdout, "Tracing blocked time (us) by off-CPU and waker stack... Hit Ctrl-C to end.\n"
                         + "".join(e["text"] for e in events))
        folded = self.render("-f", "folded", rec)
        self.assertIn("Tracing blocked time", folded.stderr)
        reader = [l for l in folded.stdout.splitlines() if ";main;cpu_pipe_wait;" in l]
        self.assertTrue(reader, folded.stdout)
        for line in folded.stdout.splitlines():
            self.assertRegex(line, r"^\S[^;]*;.*;--;.* \d+$")
        # The microseconds of the reader's stacks: the events' and the folded lines' agree.
        self.assertEqual(sum(int(l.rsplit(" ", 1)[1]) for l in reader),
                         sum(e["data"]["us"] for e in events if "cpu_pipe_wait" in e["data"]["target_ustack"]))
        self.render("--flamegraph", self.svg, rec)
        svg = self.read_svg()
        self.assertIn(">Off-Wake Time Flame Graph</text>", svg)
        self.assertRegex(svg, r"<title>cpu_pipe_wait \([0-9,]+ us, ")
        self.assertIn("<title>-- (", svg)
        # --kind and --unit still choose.
        self.render("--flamegraph", self.svg, "--kind", "cpu", "--unit", "ticks", rec)
        svg = self.read_svg()
        self.assertIn(">CPU Flame Graph</text>", svg)
        self.assertRegex(svg, r"<title>cpu_pipe_wait \([0-9,]+ ticks, ")

        # profile: the same with -f json and --flamegraph together, where
        # the live text run prints only its header.
        live = os.path.join(self.dir.name, "live.svg")
        with Work("spin", 600) as w:
            run, rec = self.record("cpu.ndjson", ["profile", "-F", "199", "-p", str(w.pid), "--flamegraph", live], w)
        self.assertEqual(run.json("event"), [], run)
        self.assertEqual(self.render(rec).stdout, "Sampling at 199 Hertz of PID [%d] by user + kernel... Hit Ctrl-C "
                         "to end.\n" % w.pid)
        self.render("--flamegraph", self.svg, rec)
        with open(live) as f:
            self.assertEqual(self.read_svg(), f.read())
        self.assertRegex(self.read_svg(), r"<title>cpu_spin \([0-9,]+ samples, ")

    def test_script_recording_drawn_as_live(self):
        """A script's -f json --flamegraph recording is drawn again exactly as
        the live graph: a frame naming each map, and no unit when a map is
        not a count() (here a sum of samples weighted 2)."""
        live = os.path.join(self.dir.name, "live.svg")
        with Work("spin", 600) as w:
            prog = "profile:hz:199 /pid == %d/ { @[ustack] = count(); @weighted[ustack] = sum(2); }" % w.pid
            run, rec = self.record("script.ndjson", ["-e", prog, "--flamegraph", live, "--title", "Two maps"], w)
        self.assertEqual(sorted(m["graph"] for m in run.json("map")), ["cpu", "cpu"], run)
        self.render("--flamegraph", self.svg, "--title", "Two maps", rec)
        with open(live) as f:
            self.assertEqual(self.read_svg(), f.read())
        svg = self.read_svg()
        self.assertRegex(svg, r"<title>@weighted \([0-9,]+, ")
        self.assertRegex(svg, r"<title>cpu_spin \([0-9,]+, ")
        self.assertNotIn("samples", svg)

    def test_script_graph_inverted_with_a_title(self):
        with Work("spin", 600) as w:
            prog = ("profile:hz:199 /pid == %d/ { @[ustack, kstack] = count(); @user[ustack] = count(); @n = count(); }"
                    % w.pid)
            run = run_tool(["-e", prog, "--flamegraph", self.svg, "--inverted", "--title", "Spin"], w.run)
        self.assertEqual(run.rc, 0, run)
        # Maps without stacks still print.
        self.assertTrue(any(re.match(r"^@n: \d+$", l) for l in run.lines), run)
        self.assertFalse(any("cpu_spin" in l for l in run.lines), run)
        svg = self.read_svg()
        self.assertIn('data-inverted="1"', svg)
        self.assertIn(">Spin</text>", svg)
        titles = re.findall(r"<g><title>([^<]*)</title><rect x=\"[0-9.]+\" y=\"(\d+)\"", svg)
        ys = {}
        for name, y in titles:
            ys.setdefault(name.rsplit(" (", 1)[0], []).append(int(y))
        self.assertIn("cpu_spin", ys, svg[:3000])
        # Inverted: the root at the top, each map's name below it, then
        # main, cpu_spin further down (under both maps).
        self.assertEqual(min(min(v) for v in ys.values()), ys["all"][0])
        self.assertEqual(ys["@"], [ys["all"][0] + 16])
        self.assertEqual(ys["@user"], [ys["all"][0] + 16])
        self.assertEqual(len(ys["cpu_spin"]), 2, ys)
        self.assertLess(max(ys["main"]), min(ys["cpu_spin"]))
        self.assertRegex(svg, r"<title>cpu_spin \([0-9,]+ samples, ")

    def test_no_file_left_by_a_run_that_fails(self):
        r = subprocess.run([BPFSCOPE, "-e", "hardware:cycles:1000000 { @[kstack] = count(); }", "--flamegraph",
                            self.svg], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(self.svg))
        r = subprocess.run([BPFSCOPE, "--dry-run", "-e", "profile:hz:99 { @[kstack] = count(); }", "--flamegraph",
                            self.svg], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(self.svg))

    def test_graph_options_need_a_graph_and_a_writable_file(self):
        r = subprocess.run([BPFSCOPE, "-e", "BEGIN { exit(); }", "--title", "x"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "ERROR: --title applies to a picture: add --flamegraph FILE.svg or --heatmap "
                                   "FILE.svg\n")
        r = subprocess.run([BPFSCOPE, "profile", "--inverted", "1"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--inverted applies to a flame graph", r.stderr)
        r = subprocess.run([BPFSCOPE, "-e", "BEGIN { exit(); }", "--flamegraph", "/nonexistent/dir/x.svg"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "ERROR: --flamegraph: cannot open /nonexistent/dir/x.svg: No such file or directory\n")
        # No map of stacks: an empty graph, and a warning saying so.
        r = subprocess.run([BPFSCOPE, "-q", "-e", "BEGIN { @x = 1; exit(); }", "--flamegraph", self.svg],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("@x: 1", r.stdout)
        self.assertIn("WARNING: --flamegraph: no map keyed by stacks", r.stderr)
        self.assertIn("0 samples in 0 stacks", self.read_svg())


class RenderTest(unittest.TestCase):
    """bpfscope render: folded stacks from a file or stdin to an SVG."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="fg-render-")

    def tearDown(self):
        self.dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def render(self, *args, stdin=None):
        return subprocess.run([BPFSCOPE, "render"] + list(args), input=stdin, capture_output=True, text=True,
                              timeout=30)

    def test_file_and_stdin(self):
        folded = "cpu_work;main;cpu_spin 90\ncpu_work;main;cpu_spin;irq_exit_[k] 10\n"
        with open(self.path("in.folded"), "w") as f:
            f.write(folded)
        r = self.render("--flamegraph", self.path("a.svg"), "--title", "From a file", self.path("in.folded"))
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(self.path("a.svg")) as f:
            svg = f.read()
        self.assertIn(">From a file</text>", svg)
        self.assertIn("<title>cpu_spin (100 samples, 100.00%)</title>", svg)
        self.assertIn("<title>irq_exit (10 samples, 10.00%)</title>", svg)
        r = self.render("--flamegraph", self.path("b.svg"), "--kind", "offcpu", "--unit", "us", "-", stdin=folded)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(self.path("b.svg")) as f:
            svg = f.read()
        self.assertIn(">Off-CPU Time Flame Graph</text>", svg)
        self.assertIn("<title>cpu_spin (100 us, 100.00%)</title>", svg)

    def test_minimum_width(self):
        r = self.render("--flamegraph", self.path("m.svg"), "--minwidth", "50", "-", stdin="big 100\nsmall 1\n")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(self.path("m.svg")) as f:
            svg = f.read()
        self.assertIn("<title>big (100 samples, 99.01%)</title>", svg)
        self.assertNotIn("<title>small", svg)
        self.assertIn("101 samples in 2 stacks; 1 frame narrower than 50 px not drawn", svg)
        for bad in ("0", "101", "x"):
            r = self.render("--flamegraph", self.path("m.svg"), "--minwidth", bad, "-", stdin="a 1\n")
            self.assertEqual(r.returncode, 1)
            self.assertIn("ERROR: render: --minwidth takes pixels from 0.01 to 100, not \"%s\"" % bad, r.stderr)

    def test_errors(self):
        with open(self.path("bad.folded"), "w") as f:
            f.write("a;b 1\na;b x\n")
        r = self.render("--flamegraph", self.path("x.svg"), self.path("bad.folded"))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "%s:2: ERROR: the count \"x\" is not a non-negative integer\n"
                         % self.path("bad.folded"))
        self.assertFalse(os.path.exists(self.path("x.svg")))
        r = self.render("--flamegraph", self.path("x.svg"), "-", stdin="ok 1\nnocount\n")
        self.assertEqual(r.stderr, "stdin:2: ERROR: expected \"frame;frame;... COUNT\", found no count\n")
        r = self.render(self.path("bad.folded"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("ERROR: render: nothing to do: give --flamegraph OUT.svg", r.stderr)
        r = self.render("--flamegraph", self.path("x.svg"), self.path("missing.folded"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("ERROR: render: cannot open %s: No such file or directory" % self.path("missing.folded"),
                      r.stderr)
        r = self.render("--flamegraph", self.path("x.svg"), "--kind", "warm", "-", stdin="a 1\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("ERROR: render: unknown --kind \"warm\" (cpu, offcpu or offwake)", r.stderr)
        r = self.render("--flamegraph", "/nonexistent/x.svg", "-", stdin="a 1\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("ERROR: render: cannot write /nonexistent/x.svg", r.stderr)


if __name__ == "__main__":
    unittest.main()
