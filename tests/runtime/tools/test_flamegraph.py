"""Flame graphs (--flamegraph FILE.svg, bpfscope render) of real runs on work
of known shape (tests/runtime/helpers/cpu_work.c), opened in headless
Chromium: the spinning function is in the CPU graph, the sleeping one in the
off-CPU graph, the pipe reader and its waker meet at "--" in the off-wake
graph; a click zooms a frame to the full width (the first click on a fresh
page too), hovering tells a frame's details, the search (Ctrl+F) highlights
matches and says their share, the reset button and Escape restore the graph.

The browser checks drive the page as a person does, with real mouse and key
events, and read only what it shows (browser.py): never its own script.
They skip when chromium is missing (scripts/test.sh installs it). Set
FLAMEGRAPH_SHOTS=DIR to keep the screenshots there: NAME-zoom.png zoomed by
the click, NAME.png after Escape (NAME: cpu, offcpu, offwake)."""
import collections
import json
import os
import re
import subprocess
import tempfile
import unittest

import browser
from cpuwork import Work
from toolrun import BPFSCOPE, mount_tracefs, run_tool

# Every frame as the page shows it, in document order (a frame is a <g>: its
# <title>, its <rect>, a <text> label where one fits): plain reads of the
# document, nothing of the page's own script.
FRAMES = r"""
Array.from(document.querySelectorAll("#fg-frames > g")).map(function (g) {
  var title = g.querySelector("title").textContent, r = g.querySelector("rect"), t = g.querySelector("text"),
      b = r.getBoundingClientRect();
  return {title: title, name: title.slice(0, title.lastIndexOf(" (")),
          x: +r.getAttribute("x"), w: +r.getAttribute("width"), y: +r.getAttribute("y"),
          fill: r.getAttribute("fill"), hidden: getComputedStyle(g).display === "none",
          label: t ? t.textContent : "", box: [b.x, b.y, b.width, b.height]};
})
"""

# The width of the i-th frame's rect.
WIDTH = 'document.querySelectorAll("#fg-frames > g")[%d].querySelector("rect").getAttribute("width")'
MATCH = "#e600e6"  # the fill of a frame the search matched


def centre(frame):
    x, y, w, h = frame["box"]
    return x + w / 2, y + h / 2


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

    def wait_width(self, page, i, width, what):
        """Waits until the i-th frame's rect is `width` wide."""
        page.wait_for("Math.abs(+%s - %r) < 0.01" % (WIDTH % i, width), what)

    def wait_details(self, page, text, what):
        """Waits until the details line under the graph says `text`."""
        page.wait_for("document.getElementById('fg-details').textContent === %s" % json.dumps(text), what)

    def explore(self, name, zoom, search, blocked=""):
        """Uses the graph in Chromium as a person does and returns what it
        showed: its frames; a click on the widest frame named `zoom`, the
        very first thing done on a fresh page; the reset button; on a fresh
        page again, hovering, the click, a search for `search` (Ctrl+F and
        the prompt) and Escape. With `blocked`: the names of the frames
        stacked on the first frame of that name, bottom up. Saves
        NAME-zoom.png (zoomed) and NAME.png (at the end, all back)."""
        shots = shots_dir() or self.dir.name
        r = {}
        with browser.Page() as page:
            page.open(self.svg)
            full = float(page.attr("#fg-svg", "data-plot-width"))
            pad = float(page.attr("#fg-svg", "data-pad"))
            before = page.read(FRAMES)
            r.update(full=full, pad=pad, count=len(before), names=collections.Counter(f["name"] for f in before),
                     title=page.text("#fg-title"), subtitle=page.text("#fg-subtitle"))
            b = next((f for f in before if f["name"] == blocked), None)
            if b:
                above = [f for f in before if f["y"] < b["y"] and f["x"] >= b["x"] - 0.01
                         and f["x"] + f["w"] <= b["x"] + b["w"] + 0.01]
                r["aboveBlocked"] = [f["name"] for f in sorted(above, key=lambda f: -f["y"])]
            named = [i for i, f in enumerate(before) if f["name"] == zoom]
            if not named:
                return r
            z = max(named, key=lambda i: before[i]["w"])
            r.update(zoomTitle=before[z]["title"], zoomFill=before[z]["fill"], before=before[z]["w"])

            # The first action on the fresh page: a click on the frame zooms it.
            page.click(*centre(before[z]))
            self.wait_width(page, z, full, "the first click on a fresh page to zoom %s to the full width" % zoom)
            zoomed = page.read(FRAMES)
            r.update(after=zoomed[z]["w"], afterX=zoomed[z]["x"], afterBox=zoomed[z]["box"],
                     hidden=sum(f["hidden"] for f in zoomed), label=zoomed[z]["label"],
                     resetShown=page.shown("#fg-reset"))
            page.screenshot(os.path.join(shots, name + "-zoom.png"))
            self.assertGreater(os.path.getsize(os.path.join(shots, name + "-zoom.png")), 1000)
            # The reset button puts the frames back.
            page.click(*page.centre("#fg-reset"))
            self.wait_width(page, z, before[z]["w"], "the reset button to unzoom %s" % zoom)
            back = page.read(FRAMES)
            r.update(reset=back[z]["w"], hiddenAfterReset=sum(f["hidden"] for f in back),
                     resetShownAfterReset=page.shown("#fg-reset"))

            # A fresh page again, where the mouse first hovers the frame: the
            # details line says its title, and nothing once the mouse leaves.
            page.open(self.svg)
            page.hover(*centre(before[z]))
            self.wait_details(page, before[z]["title"], "the details of the hovered %s" % zoom)
            r["hoverDetails"] = page.text("#fg-details")
            page.hover(*page.centre("#fg-title"))
            self.wait_details(page, "", "the details to go when the mouse leaves the frames")
            # Zoomed, the frames still shown tell their details too.
            page.click(*centre(before[z]))
            self.wait_width(page, z, full, "a click to zoom %s" % zoom)
            shown = page.read(FRAMES)
            other = next(i for i, f in enumerate(shown) if i != z and not f["hidden"] and f["box"][2] > 4)
            page.hover(*centre(shown[other]))
            self.wait_details(page, shown[other]["title"], "the details of a frame hovered in the zoomed graph")
            r["otherDetails"] = page.text("#fg-details")

            # Ctrl+F asks for a regular expression: the matching frames turn
            # magenta and the line under the graph says their share.
            page.answer_prompt(search)
            page.key("f", ctrl=True)
            page.wait_for("document.getElementById('fg-matched').textContent", "the search to say what it matched")
            found = page.read(FRAMES)
            r.update(dialogs=list(page.dialogs), matched=page.text("#fg-matched"),
                     searchButton=page.text("#fg-search"),
                     highlighted=[f["name"] for f in found if f["fill"] == MATCH],
                     searchPercents=[f["title"] for f in found if re.search(search, f["name"])])
            m = re.match(r"Matched: ([0-9.]+)%", r["matched"])
            r["share"] = float(m.group(1)) if m else None

            # Escape: the whole graph again, nothing highlighted.
            page.key("Escape")
            page.wait_for("document.getElementById('fg-matched').textContent === ''", "Escape to end the search")
            self.wait_width(page, z, before[z]["w"], "Escape to unzoom %s" % zoom)
            end = page.read(FRAMES)
            r.update(highlightedAfterClear=sum(f["fill"] == MATCH for f in end),
                     hiddenAfterEscape=sum(f["hidden"] for f in end),
                     movedAfterEscape=[f["title"] for f, g in zip(end, before)
                                       if abs(f["x"] - g["x"]) > 0.01 or abs(f["w"] - g["w"]) > 0.01
                                       or f["fill"] != g["fill"]],
                     resetShownAfterEscape=page.shown("#fg-reset"), searchButtonAfterClear=page.text("#fg-search"),
                     errors=list(page.errors))
            page.screenshot(os.path.join(shots, name + ".png"))
        return r

    def assert_interactive(self, r, zoom):
        """The first click on a fresh page zoomed `zoom` to the full width,
        the reset button and Escape put it back, hovering told frames'
        details, and the search asked for its pattern."""
        self.assertEqual(r["errors"], [], r)
        self.assertLess(r["before"], r["full"] - 1, r)
        self.assertAlmostEqual(r["after"], r["full"], delta=0.01)
        self.assertAlmostEqual(r["afterX"], r["pad"], delta=0.01)
        self.assertEqual(r["pad"], 10, r)
        # As drawn in the window: from the left margin across the plot.
        self.assertAlmostEqual(r["afterBox"][0], r["pad"], delta=0.5)
        self.assertAlmostEqual(r["afterBox"][2], r["full"], delta=0.5)
        self.assertTrue(r["resetShown"], r)
        self.assertGreater(r["hidden"], 0, r)
        self.assertTrue(r["label"].startswith(zoom[:3]), r)
        self.assertAlmostEqual(r["reset"], r["before"], delta=0.01)
        self.assertEqual(r["hiddenAfterReset"], 0, r)
        self.assertFalse(r["resetShownAfterReset"], r)
        self.assertEqual(r["hoverDetails"], r["zoomTitle"], r)
        self.assertRegex(r["otherDetails"], r"^.+ \([0-9,]+( \w+)?, [0-9.]+%\)$")
        self.assertEqual(r["dialogs"], [("prompt", "Search (regular expression):")], r)
        self.assertEqual(r["searchButton"], "Clear search", r)
        self.assertEqual(r["highlightedAfterClear"], 0, r)
        self.assertEqual(r["hiddenAfterEscape"], 0, r)
        self.assertEqual(r["movedAfterEscape"], [], r)
        self.assertFalse(r["resetShownAfterEscape"], r)
        self.assertEqual(r["searchButtonAfterClear"], "Search", r)

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
        r = self.explore("cpu", "cpu_spin", "cpu_s.in")
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

    def test_offcpu_graph_of_offcputime(self):
        with Work("sleep", 20, 10, "pipe", 15, 10) as w:
            run = run_tool(["offcputime", "-p", str(w.pid), "--flamegraph", self.svg, "--title", "Sleeps & <naps>"],
                           w.run)
        self.assertEqual(run.rc, 0, run)
        svg = self.read_svg()
        self.assertIn(">Sleeps &amp; &lt;naps&gt;</text>", svg)
        if not browser.CHROMIUM:
            self.skipTest("chromium not installed")
        r = self.explore("offcpu", "cpu_sleep", "nanosleep")
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
            run = run_tool(["-k", "offwaketime", "-p", str(w.pid), "--flamegraph", self.svg], w.run)
        self.assertEqual(run.rc, 0, run)
        if not browser.CHROMIUM:
            self.skipTest("chromium not installed")
        r = self.explore("offwake", "cpu_pipe_wait", "cpu_wake", blocked="cpu_pipe_wait")
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
        if not {"anon_pipe_write", "pipe_write"} & set(waker):
            # The kernel could not take the waker's kernel stack (once in
            # the ASan job): the run (-k) says so, at the waker's kstack.
            self.assertIn("WARNING: Failed to get_stackid", run.stderr, r)
            self.assertIn("@wk[$p->pid] = kstack(bcc);", run.stderr, r)
        else:
            self.assertLess(waker.index("pipe_write" if "pipe_write" in waker else "anon_pipe_write"),
                            waker.index("cpu_wake"), r)
        self.assertLess(waker.index("cpu_wake"), waker.index("waker_main"), r)
        self.assertEqual(waker[-1], "cpu_work", r)

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
        """A tool's -f record run saved as a recording."""
        run = run_tool(["-f", "record"] + args, work.run)
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

        # profile: the same with -f record and --flamegraph together, where
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
        """A script's -f record --flamegraph recording is drawn again exactly as
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
