"""Shared pieces of the metrics tests: a bpfscope run that serves
--prometheus on a free port, scrapes of it over real HTTP, a parser of the
text exposition format, and promtool (Debian's prometheus package), which
judges every page a test reads."""
import re
import subprocess
import time
import urllib.error
import urllib.request

from toolrun import start_tool

SERVING = re.compile(r"^Serving metrics on http://(.+):(\d+)/metrics$")


class Served:
    """`bpfscope --prometheus ADDR:0 ARGS`, attached; .port is where it serves."""

    def __init__(self, args, address="127.0.0.1", env=None):
        self.proc = start_tool(["--prometheus", address + ":0"] + list(args), env)
        line = None
        ok = self.proc.wait_for(lambda _: any(l and SERVING.match(l) for l in self.proc.err), 10)
        if ok:
            line = next(l for l in self.proc.err if l and SERVING.match(l))
        if not line:
            self.proc.stop()
            raise AssertionError("no 'Serving metrics' line: %r" % self.proc.finish())
        self.port = int(SERVING.match(line).group(2))

    def url(self, path="/metrics"):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def get(self, path="/metrics", headers=None, method="GET", data=None):
        """(status, headers, body text) of one request."""
        req = urllib.request.Request(self.url(path), headers=headers or {}, method=method, data=data)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def scrape(self, openmetrics=False, token=None):
        """The page, checked by promtool; its samples (parse())."""
        headers = {}
        if openmetrics:
            headers["Accept"] = "application/openmetrics-text; version=1.0.0; charset=utf-8"
        if token:
            headers["Authorization"] = "Bearer " + token
        status, hdrs, body = self.get(headers=headers)
        assert status == 200, (status, body)
        check(body)
        return parse(body)

    def finish(self):
        self.proc.stop()
        return self.proc.finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.proc.poll() is None:
            self.finish()


def check(page):
    """promtool's verdict on a text page: an AssertionError on a parse error
    (its lint, which judges the map names a script chose, is not asked for).
    promtool 2.42 reads only the text format; OpenMetrics pages are read by
    a real Prometheus server in test_prometheus.py."""
    if page.endswith("# EOF\n"):
        return
    p = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True)
    errors = [l for l in (p.stdout + p.stderr).splitlines() if "error" in l.lower()]
    assert not errors, "promtool: %s\n%s" % (errors, page[:2000])


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(page):
    """{(name, frozenset of (label, value)): float} of a text page."""
    out = {}
    for line in page.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        labels = frozenset(LABEL.findall(m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def value(samples, name, **labels):
    """The value of one sample, or None."""
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())))


def wait_value(served, name, want, timeout=10, token=None, **labels):
    """Scrapes until the sample reaches `want`; returns the last value."""
    end = time.time() + timeout
    got = None
    while time.time() < end:
        got = value(served.scrape(token=token), name, **labels)
        if got is not None and got >= want:
            return got
        time.sleep(0.1)
    return got
