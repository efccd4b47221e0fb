"""Opening flame-graph SVGs in a real browser: headless Chromium (Debian's
`chromium` package). `probe()` runs a test script inside a copy of the SVG,
after the graph's own script, and reads back what it wrote into the
document (chromium --dump-dom prints the document once its scripts have
run); `screenshot()` saves a PNG of the SVG as a browser draws it."""
import html
import json
import os
import re
import shutil
import subprocess
import tempfile

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# The result element the probe script appends to the SVG.
RESULT = re.compile(r'<text id="fg-test-result"[^>]*>(.*?)</text>', re.S)


def _run(args, timeout=90):
    with tempfile.TemporaryDirectory(prefix="fg-chromium-") as profile:
        argv = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--user-data-dir=" + profile] + args
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def probe(svg_path, script):
    """Runs `script` (the body of a JS function that returns a JSON-able
    value; `fg` is the graph's window.flamegraph API) in a copy of the SVG
    and returns its value; a thrown error comes back as {"error": ...}."""
    with open(svg_path) as f:
        svg = f.read()
    test = """<script type="text/ecmascript"><![CDATA[
(function () {
  var out;
  try { out = (function (fg) { %s })(window.flamegraph); }
  catch (e) { out = {error: String(e) + " " + e.stack}; }
  var t = document.createElementNS("http://www.w3.org/2000/svg", "text");
  t.setAttribute("id", "fg-test-result");
  t.textContent = JSON.stringify(out);
  document.documentElement.appendChild(t);
})();
]]></script>
</svg>""" % script
    assert svg.rstrip().endswith("</svg>"), svg[-200:]
    with tempfile.TemporaryDirectory(prefix="fg-probe-") as d:
        copy = os.path.join(d, "graph.svg")
        with open(copy, "w") as f:
            f.write(svg.rstrip()[:-len("</svg>")] + test)
        r = _run(["--dump-dom", "--virtual-time-budget=5000", "file://" + copy])
    m = RESULT.search(r.stdout)
    assert m, "no result in the dumped DOM (rc %d): %s\n%s" % (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return json.loads(html.unescape(m.group(1)))


def screenshot(svg_path, png_path, size="1400,900"):
    """Saves the browser's rendering of the SVG as a PNG."""
    r = _run(["--screenshot=" + os.path.abspath(png_path), "--window-size=" + size,
              "--hide-scrollbars", "file://" + os.path.abspath(svg_path)])
    assert os.path.exists(png_path) and os.path.getsize(png_path) > 1000, r.stderr[-2000:]
