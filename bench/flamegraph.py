#!/usr/bin/env python3
"""Flame-graph benchmark (not a timed test): `bpfscope render --flamegraph`
on 100,000 distinct folded stacks, the time for headless Chromium to open
and draw the SVG it writes, and the same for FlameGraph's flamegraph.pl on
the same input, in interleaved rounds.

    FLAMEGRAPH_PL=/path/to/flamegraph.pl python3 bench/flamegraph.py [--rounds N] [--stacks N]

BPFSCOPE names the binary (default build/bpfscope). Without FLAMEGRAPH_PL
(or perl) the flamegraph.pl columns are skipped; without chromium the
browser column is. The input is synthetic and the same in every run (a
fixed seed): stacks grow from the prefixes of earlier ones, as real
profiles share their roots, 8-60 frames deep, with counts from a heavy
tailed distribution."""
import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BPFSCOPE = os.environ.get("BPFSCOPE", os.path.join(HERE, "..", "build", "bpfscope"))
FLAMEGRAPH_PL = os.environ.get("FLAMEGRAPH_PL", "")
CHROMIUM = shutil.which("chromium")


def folded_input(n, seed=11):
    rnd = random.Random(seed)
    names = ["fn_%s_%d" % (rnd.choice(["read", "write", "parse", "hash", "lock", "alloc", "copy", "sched", "tcp",
                                        "vfs", "ext4", "page", "run", "loop", "json", "sql"]), i) for i in range(6000)]
    kernel = ["k_%s_%d_[k]" % (rnd.choice(["do_syscall", "schedule", "irq", "softirq", "copy_user", "tcp_sendmsg",
                                           "vfs_read", "handle_mm_fault"]), i) for i in range(1500)]
    comms = ["proc%d" % i for i in range(12)]
    stacks, seen = [], set()
    while len(stacks) < n:
        if stacks and rnd.random() < 0.97:
            base = rnd.choice(stacks)
            base = base[:rnd.randint(1, len(base))]
        else:
            base = [rnd.choice(comms)]
        depth = rnd.randint(8, 60)
        frames = list(base)
        while len(frames) < depth:
            frames.append(rnd.choice(names) if len(frames) < depth * 0.7 else rnd.choice(kernel))
        key = ";".join(frames)
        if key in seen:
            continue
        seen.add(key)
        stacks.append(frames)
    lines = ["%s %d" % (";".join(s), max(1, int(rnd.paretovariate(1.2)))) for s in stacks]
    return "\n".join(lines) + "\n"


def timed(argv, stdout=subprocess.DEVNULL):
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("%s failed: %s" % (argv[0], r.stderr.decode()[-2000:]))
    return dt


def chromium_draw(svg, png, profile):
    """Wall time of headless Chromium opening the SVG and saving a
    screenshot of it (parse, layout, paint)."""
    return timed([CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--user-data-dir=" + profile, "--hide-scrollbars", "--window-size=1400,900",
                  "--screenshot=" + png, "file://" + svg])


def fmt(xs):
    return "median %.3f s, min %.3f s" % (statistics.median(xs), min(xs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stacks", type=int, default=100000)
    a = ap.parse_args()
    have_pl = bool(FLAMEGRAPH_PL) and os.path.exists(FLAMEGRAPH_PL) and shutil.which("perl")
    with tempfile.TemporaryDirectory(prefix="fg-bench-") as d:
        folded = os.path.join(d, "in.folded")
        with open(folded, "w") as f:
            f.write(folded_input(a.stacks))
        tiny = os.path.join(d, "tiny.svg")
        with open(tiny, "w") as f:
            f.write('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>\n')
        # Each configuration: how to make its SVG (writing to `out`).
        configs = [("bpfscope render (min width 0.5 px, its default)", "ours",
                    lambda out: [BPFSCOPE, "render", "--flamegraph", out, folded]),
                   ("bpfscope render --minwidth 0.1", "ours01",
                    lambda out: [BPFSCOPE, "render", "--minwidth", "0.1", "--flamegraph", out, folded])]
        if have_pl:
            configs += [("flamegraph.pl (min width 0.1 px, its default)", "pl",
                         lambda out: ["perl", FLAMEGRAPH_PL, folded]),
                        ("flamegraph.pl --minwidth 0.5", "pl05",
                         lambda out: ["perl", FLAMEGRAPH_PL, "--minwidth", "0.5", folded])]
        make = {k: [] for _, k, _ in configs}
        draw = {k: [] for _, k, _ in configs}
        draw["tiny"] = []
        profile = os.path.join(d, "profile")
        for _ in range(a.rounds):
            for _, key, argv in configs:
                out = os.path.join(d, key + ".svg")
                if key.startswith("pl"):
                    with open(out, "w") as f:
                        make[key].append(timed(argv(out), stdout=f))
                else:
                    make[key].append(timed(argv(out)))
            if CHROMIUM:
                draw["tiny"].append(chromium_draw(tiny, os.path.join(d, "t.png"), profile))
                for _, key, _ in configs:
                    draw[key].append(chromium_draw(os.path.join(d, key + ".svg"), os.path.join(d, key + ".png"),
                                                   profile))
        print("input: %d distinct folded stacks, %.1f MB; %d rounds" %
              (a.stacks, os.path.getsize(folded) / 1e6, a.rounds))
        for name, key, _ in configs:
            path = os.path.join(d, key + ".svg")
            with open(path) as f:
                svg = f.read()
            print("%s: %s; SVG %.1f MB, %d frames" % (name, fmt(make[key]), len(svg) / 1e6, svg.count("<title>") - 1))
        if have_pl:
            print("  ratio of medians, bpfscope / flamegraph.pl at their defaults: %.3f" %
                  (statistics.median(make["ours"]) / statistics.median(make["pl"])))
        else:
            print("flamegraph.pl: skipped (set FLAMEGRAPH_PL)")
        if CHROMIUM:
            base = statistics.median(draw["tiny"])
            print("chromium open + screenshot, an empty SVG: %s" % fmt(draw["tiny"]))
            for name, key, _ in configs:
                print("chromium open + screenshot, %s: %s (median %.3f s over the empty SVG)" %
                      (name, fmt(draw[key]), statistics.median(draw[key]) - base))
        else:
            print("chromium: skipped (not installed)")


if __name__ == "__main__":
    main()
