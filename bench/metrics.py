#!/usr/bin/env python3
"""Metrics endpoint benchmark (issue 19), run as root:

    python3 bench/metrics.py [--bpfscope build-release/bpfscope] [--scrapes 40]

1. Scrape latency and RSS of `bpfscope --prometheus` serving a count() map of
   1,000 and 10,000 keys (filled by this process's getppid() calls), in the
   text format, OpenMetrics and protobuf: the wall time of each HTTP request
   from a client on loopback, median and p90, and the page size.
2. The user's alternative with bpftrace: the same map printed each second as
   JSON (`interval:s:1 { print(@m); }`, -f json) and a shim that parses the
   last print and serves it as Prometheus text (written here, ~30 lines of
   Python, as a user would). bpftrace's and the shim's RSS, the CPU time
   bpftrace spends per second to print the map, and the shim's scrape time.
3. `bpfscope serve` of biolatency, tcplife and runqlat: RSS after scrapes.

Everything runs in the same run, on this machine; ratios are bpfscope's over
the alternative's. ebpf_exporter is not packaged for Debian; its published
figures are per-call probe overheads, quoted in BENCHMARKS.md.
"""
import argparse
import http.server
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ACCEPT = {
    "text": "text/plain;version=0.0.4",
    "openmetrics": "application/openmetrics-text;version=1.0.0",
    "protobuf": "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
}


def status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M).group(1))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(port, accept, n):
    times, size = [], 0
    for _ in range(n):
        req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port, headers={"Accept": accept})
        t = time.perf_counter()
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        times.append(time.perf_counter() - t)
        size = len(body)
    times.sort()
    return statistics.median(times) * 1000, times[int(len(times) * 0.9)] * 1000, size


def calls(n):
    for _ in range(n):
        os.getppid()


def wait_line(proc, pattern, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        line = proc.stderr.readline()
        m = re.search(pattern, line)
        if m:
            return m
    raise RuntimeError("no line matching %r" % pattern)


def bpfscope_endpoint(binary, keys, scrapes):
    prog = "tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @m[@i] = count(); @i++; }" % os.getpid()
    env = dict(os.environ, BPFTRACE_MAX_MAP_KEYS=str(keys * 2))
    p = subprocess.Popen([binary, "-q", "--prometheus", "127.0.0.1:0", "--max-series", str(keys * 2), "-e", prog],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        port = int(wait_line(p, r"Serving metrics on http://127.0.0.1:(\d+)/").group(1))
        time.sleep(0.3)
        calls(keys)
        out = {}
        for fmt, accept in ACCEPT.items():
            out[fmt] = scrape(port, accept, scrapes)
        out["rss"] = status(p.pid, "VmRSS")
        out["hwm"] = status(p.pid, "VmHWM")
        return out
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(60)


class Shim(http.server.BaseHTTPRequestHandler):
    """The last map bpftrace printed, as Prometheus text."""
    page = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(Shim.page)))
        self.end_headers()
        self.wfile.write(Shim.page)

    def log_message(self, *args):
        pass


def bpftrace_shim(keys, scrapes):
    prog = ("tracepoint:syscalls:sys_enter_getppid /pid == %d/ { @m[@i] = count(); @i++; } "
            "interval:s:1 { print(@m); }" % os.getpid())
    # 0.17 (Debian's) reads BPFTRACE_MAP_KEYS_MAX; later ones BPFTRACE_MAX_MAP_KEYS.
    env = dict(os.environ, BPFTRACE_MAX_MAP_KEYS=str(keys * 2), BPFTRACE_MAP_KEYS_MAX=str(keys * 2))
    p = subprocess.Popen(["bpftrace", "-f", "json", "-e", prog], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Shim)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    got = threading.Event()

    def read():
        for line in p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a blank line between messages
            if msg.get("type") != "map" or "@m" not in msg.get("data", {}):
                continue
            lines = ["# TYPE bpftrace_m_total counter"]
            for k, v in msg["data"]["@m"].items():
                lines.append('bpftrace_m_total{key="%s"} %s' % (k, v))
            Shim.page = ("\n".join(lines) + "\n").encode()
            if len(msg["data"]["@m"]) >= keys:
                got.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        time.sleep(3)  # bpftrace attaches
        calls(keys)
        if not got.wait(30):
            raise RuntimeError("bpftrace printed no full map")
        c0, t0 = cpu_seconds(p.pid), time.time()
        time.sleep(5)
        cpu = (cpu_seconds(p.pid) - c0) / (time.time() - t0)
        med, p90, size = scrape(server.server_address[1], ACCEPT["text"], scrapes)
        return {"scrape": (med, p90, size), "rss": status(p.pid, "VmRSS"), "shim_rss": status(os.getpid(), "VmRSS"),
                "cpu": cpu}
    finally:
        server.shutdown()
        p.send_signal(signal.SIGINT)
        p.wait(60)


def serve_agent(binary, scrapes):
    p = subprocess.Popen([binary, "serve", "--prometheus", "127.0.0.1:0", "biolatency", "-D", "tcplife", "runqlat"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = int(wait_line(p, r"Serving metrics on http://127.0.0.1:(\d+)/").group(1))
        time.sleep(2)
        med, p90, size = scrape(port, ACCEPT["text"], scrapes)
        return {"scrape": (med, p90, size), "rss": status(p.pid, "VmRSS"), "hwm": status(p.pid, "VmHWM")}
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpfscope", default=os.path.join(HERE, "../build-release/bpfscope"))
    ap.add_argument("--scrapes", type=int, default=40)
    a = ap.parse_args()
    print("== bpfscope --prometheus: a count() map of N keys, %d scrapes each" % a.scrapes)
    print("%7s %-12s %12s %12s %10s" % ("keys", "format", "median ms", "p90 ms", "page KB"))
    results = {}
    for keys in (1000, 10000):
        r = bpfscope_endpoint(a.bpfscope, keys, a.scrapes)
        results[keys] = r
        for fmt in ACCEPT:
            med, p90, size = r[fmt]
            print("%7d %-12s %12.2f %12.2f %10.1f" % (keys, fmt, med, p90, size / 1024))
        print("%7d RSS %.1f MB (peak %.1f MB)" % (keys, r["rss"] / 1024, r["hwm"] / 1024))
    print("\n== bpftrace -f json printing the map every second + a Python shim serving it")
    for keys in (1000, 10000):
        s = bpftrace_shim(keys, a.scrapes)
        b = results[keys]
        print("%7d keys: shim scrape median %.2f ms (the page is up to 1 s old); bpftrace RSS %.1f MB + shim %.1f MB; "
              "bpftrace CPU %.1f%% of a core to print it each second" %
              (keys, s["scrape"][0], s["rss"] / 1024, s["shim_rss"] / 1024, s["cpu"] * 100))
        print("         bpfscope / (bpftrace + shim) RSS: %.2f; bpfscope scrape (text) %.2f ms, read at scrape time" %
              (b["rss"] / (s["rss"] + s["shim_rss"]), b["text"][0]))
    print("\n== bpfscope serve biolatency -D tcplife runqlat")
    r = serve_agent(a.bpfscope, a.scrapes)
    print("RSS %.1f MB (peak %.1f MB); scrape median %.2f ms, p90 %.2f ms, page %.1f KB" %
          (r["rss"] / 1024, r["hwm"] / 1024, r["scrape"][0], r["scrape"][1], r["scrape"][2] / 1024))


if __name__ == "__main__":
    sys.exit(main())
