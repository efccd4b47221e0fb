"""Heat maps (--heatmap) on the real kernel: biolatency's per-interval
histograms of direct I/O to a loop device the test makes, drawn as an SVG
that headless Chromium opens (one column per interval, the counts of the
I/O done) and drawn again from the run's recording by `bpfscope render`;
and a script's histograms drawn on a terminal (a pty, read by the pyte
terminal emulator), redrawn in place as each interval arrives.

Screenshots go to $HEATMAP_SHOTS when it is set (else a temporary
directory), to be looked at."""
import html
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import fcntl
import termios

import browser
from blockio import LoopDev, run_counted
from histrun import text_hists, total
from toolrun import BPFSCOPE, mount_tracefs

try:
    import pyte
except ImportError:  # Debian's python3-pyte, for another Python than Debian's
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import pyte
    except ImportError:
        pyte = None

WRITES = 30
INTERVALS = 3

# Every cell of the drawing as the page shows it: column, row, count,
# tooltip (its <title>), its box in the window; and each panel's size.
CELLS = """
(function () {
  var cells = [];
  document.querySelectorAll("rect.cell").forEach(function (r) {
    var b = r.getBoundingClientRect();
    cells.push([+r.getAttribute("data-col"), +r.getAttribute("data-row"), +r.getAttribute("data-count"),
                r.querySelector("title").textContent, [b.x, b.y, b.width, b.height]]);
  });
  var panels = [];
  document.querySelectorAll("g.panel").forEach(function (g) {
    var box = g.getBBox();
    panels.push({name: g.getAttribute("data-name"), width: box.width, height: box.height});
  });
  return {cells: cells, panels: panels};
})()
"""

# The element under the mouse (the innermost one in :hover): a cell's
# column, row and tooltip.
HOVERED = """
(function () {
  var h = document.querySelectorAll(":hover"), e = h[h.length - 1], t = e && e.querySelector("title");
  return e ? {cls: e.getAttribute("class"), col: e.getAttribute("data-col"), row: e.getAttribute("data-row"),
              tooltip: t ? t.textContent : null} : null;
})()
"""


def shots_dir(fallback):
    d = os.environ.get("HEATMAP_SHOTS")
    if d:
        os.makedirs(d, exist_ok=True)
        return d
    return fallback


def svg_cells(path):
    """{(col, row): count} of an SVG heat map, read from its file."""
    with open(path) as f:
        svg = f.read()
    cells = {}
    for m in re.finditer(r'<rect class="cell" data-col="(\d+)" data-row="(\d+)" data-count="(\d+)"', svg):
        cells[(int(m.group(1)), int(m.group(2)))] = int(m.group(3))
    return cells


class HeatmapSvgTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="heatmap-test-")

    def tearDown(self):
        self.dir.cleanup()

    def io(self, dev):
        # Writes in the first interval and in the second.
        dev.dd(write=True, count=WRITES)
        time.sleep(1.2)
        dev.dd(write=True, count=WRITES, seek=200)

    def test_biolatency_per_interval(self):
        svg = os.path.join(self.dir.name, "bio.svg")
        rec = os.path.join(self.dir.name, "bio.ndjson")
        with LoopDev() as dev:
            run = run_counted(["--heatmap", svg, "-f", "record", "biolatency", "-d", dev.name, "1", str(INTERVALS)],
                              lambda: self.io(dev))
        self.assertEqual(run.rc, 0, run)
        with open(rec, "w") as f:
            f.write("".join(l + "\n" for l in run.lines))
        msgs = [json.loads(l) for l in run.lines]
        hists = [m for m in msgs if m["type"] == "hist"]
        # One histogram message per interval, each with the time it was printed.
        self.assertEqual(len(hists), INTERVALS, msgs)
        times = [m["time"] for m in hists]
        self.assertTrue(all(0.8 < b - a < 1.5 for a, b in zip(times, times[1:])), times)
        per_interval = [sum(b["count"] for b in m["data"]["@usecs"]) for m in hists]
        self.assertEqual(sum(per_interval), 2 * WRITES, per_interval)

        # The SVG: a column per interval, each summing to its interval's count.
        cells = svg_cells(svg)
        self.assertEqual({c for c, _ in cells}, set(range(INTERVALS)), cells)
        self.assertEqual([sum(n for (c, _), n in cells.items() if c == col) for col in range(INTERVALS)],
                         per_interval)
        if not browser.CHROMIUM:
            self.skipTest("chromium not installed")
        with browser.Page(1200, 420) as page:
            page.open(svg)
            r = page.read(CELLS)
            # The mouse on the busiest cell: it is the element hovered, and
            # its tooltip is the cell's.
            busiest = max(r["cells"], key=lambda c: c[2])
            x, y, w, h = busiest[4]
            page.hover(x + w / 2, y + h / 2)
            hovered = page.wait_for("(function (h) { return h && h.cls === 'cell' && h; })(%s)" % HOVERED,
                                    "the mouse to be over a cell")
            page.screenshot(os.path.join(shots_dir(self.dir.name), "biolatency-heatmap.png"))
            self.assertEqual(page.errors, [])
        self.assertEqual(len({c[0] for c in r["cells"]}), INTERVALS, r)
        self.assertEqual(sum(c[2] for c in r["cells"]), 2 * WRITES, r)
        self.assertEqual([p["name"] for p in r["panels"]], ["@usecs"], r)
        self.assertGreater(r["panels"][0]["height"], 50, r)
        # A tooltip: the map, when, the bucket and its count.
        self.assertRegex(busiest[3], r"^@usecs\n\d+s \(\d\d:\d\d:\d\d\)\n\[\d+[KM]?, \d+[KM]?\): %d$" % busiest[2])
        self.assertEqual((int(hovered["col"]), int(hovered["row"]), hovered["tooltip"]),
                         (busiest[0], busiest[1], busiest[3]), hovered)
        self.assertGreater(os.path.getsize(os.path.join(shots_dir(self.dir.name), "biolatency-heatmap.png")), 1000)

        # Drawn again from the recording: the same cells.
        again = os.path.join(self.dir.name, "again.svg")
        p = subprocess.run([BPFSCOPE, "render", "--heatmap", again, rec], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(svg_cells(again), cells)
        # On the terminal instead of the histograms' text: the same counts.
        p = subprocess.run([BPFSCOPE, "render", "--heatmap", "-", rec], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("@usecs  %d intervals, largest count in a bucket %d" % (INTERVALS, max(cells.values())),
                      p.stdout)
        self.assertNotIn("usecs               : count", p.stdout)

    def test_text_stays_and_warns_without_interval_output(self):
        svg = os.path.join(self.dir.name, "none.svg")
        p = subprocess.run([BPFSCOPE, "--heatmap", svg, "-e", "BEGIN { @h = hist(5); exit(); }"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("@h:\n[4, 8)", p.stdout)  # the exit-time map, printed as ever
        self.assertIn("WARNING: --heatmap: no hist() or lhist() map was printed during the run", p.stderr)
        self.assertEqual(svg_cells(svg), {})

    def test_option_errors(self):
        for args, msg in [(["-f", "json", "--heatmap", "-"], "ERROR: --heatmap - draws on the terminal"),
                          (["--title", "x"], "ERROR: --title applies to a picture"),
                          (["--heatmap", "/nonexistent/dir/h.svg"], "ERROR: --heatmap: cannot open /nonexistent")]:
            p = subprocess.run([BPFSCOPE] + args + ["-e", "BEGIN { exit(); }"], capture_output=True, text=True,
                               timeout=30)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(msg, p.stderr, args)


# Column i (1-6) holds 2 at the bucket of 2^i and 1 at that of 2^(i+1):
# rows [2, 4) to [128, 256).
STAIRS = ("interval:ms:300 { @i = @i + 1; @h = hist(1 << @i); @h = hist(1 << @i); @h = hist(2 << @i); "
          "print(@h); clear(@h); if (@i == 6) { exit(); } }")


def run_on_pty(argv, cols, rows, timeout=30):
    """Runs argv with its stdout and stderr on a pty of cols x rows; returns
    everything it wrote and its exit status."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    os.close(master)
    try:
        rc = p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = p.wait()
    return out, rc


def screen_html(screen):
    """The emulated screen as HTML: each character in its colour."""
    rows = []
    for y in range(screen.lines):
        line = screen.buffer[y]
        cells = []
        for x in range(screen.columns):
            ch = line[x]
            colour = "#" + ch.fg if re.fullmatch(r"[0-9a-f]{6}", ch.fg) else "#d0d0d0"
            cells.append('<span style="color:%s">%s</span>' % (colour, html.escape(ch.data)))
        rows.append("".join(cells))
    return ("<html><body style='background:#1c1c1c;margin:12px'><pre style='font:15px/1.15 "
            "\"DejaVu Sans Mono\",monospace;margin:0'>%s</pre></body></html>" % "\n".join(rows))


class HeatmapTerminalTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_drawn_in_place_one_column_per_interval(self):
        if pyte is None:
            self.skipTest("python3-pyte not installed")
        out, rc = run_on_pty([BPFSCOPE, "--heatmap", "-", "-e", STAIRS], cols=100, rows=40)
        self.assertEqual(rc, 0, out)
        text = out.decode("utf-8", "replace")
        # Six drawings, each after the first over the last (cursor up, erase down).
        self.assertEqual(text.count("intervals, largest count"), 5, text)
        self.assertEqual(len(re.findall(r"\x1b\[\d+A\x1b\[J", text)), 5, text)
        screen = pyte.Screen(100, 40)
        pyte.Stream(screen).feed(text)
        lines = [l.rstrip() for l in screen.display]
        titles = [i for i, l in enumerate(lines) if l.startswith("@h  ")]
        self.assertEqual(len(titles), 1, "\n".join(lines))  # one drawing left on the screen
        top = titles[0]
        self.assertEqual(lines[top], "@h  6 intervals, largest count in a bucket 2")
        # Rows from [128, 256) (2 << 6) down to [2, 4) (1 << 1).
        labels = [l.split("│")[0].strip() for l in lines[top + 1:top + 8]]
        self.assertEqual(labels, ["[128, 256)", "[64, 128)", "[32, 64)", "[16, 32)", "[8, 16)", "[4, 8)", "[2, 4)"],
                         "\n".join(lines))
        grid_x = lines[top + 1].index("│") + 1
        for r, label in enumerate(labels):
            bucket_low = int(label[1:].split(",")[0])
            y = top + 1 + r
            for col in range(6):
                i = col + 1
                expect = 2 if bucket_low == 1 << i else 1 if bucket_low == 2 << i else 0
                cell = screen.buffer[y][grid_x + 2 * col]
                if expect:
                    self.assertEqual(cell.data, "█", (label, i, "\n".join(lines)))
                else:
                    self.assertEqual(cell.data, " ", (label, i, "\n".join(lines)))
        # The two counts have the two ends of the ramp.
        low = screen.buffer[top + 1][grid_x + 2 * 5].fg   # [128, 256) in column 6: count 1
        high = screen.buffer[top + 2][grid_x + 2 * 5].fg  # [64, 128) in column 6: count 2
        self.assertNotEqual(low, high)
        self.assertEqual(high, "d7005f")
        # Time labels under columns 1 and 6 (0.3 s and 1.8 s in, later on a busy machine).
        self.assertRegex(lines[top + 9], r"^\s+\d+(\.\d)?s\s+\d+(\.\d)?s$")
        with tempfile.TemporaryDirectory(prefix="heatmap-term-") as d:
            page = os.path.join(d, "screen.html")
            with open(page, "w") as f:
                f.write(screen_html(screen))
            if not browser.CHROMIUM:
                self.skipTest("chromium not installed")
            png = os.path.join(shots_dir(d), "terminal-heatmap.png")
            browser.screenshot(page, png, 1000, 520)


if __name__ == "__main__":
    unittest.main()
