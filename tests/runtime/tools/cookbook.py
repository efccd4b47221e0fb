"""The cookbook's entries (docs/one-liners.md, the data bpfscope embeds for
--examples) for its tests: each entry's commands, run around the work they
observe, with the numbers read from the same command's -f json output."""
import json
import os
import re
import shlex
import subprocess
import time

from toolrun import BPFSCOPE, start_tool

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "../../../docs/one-liners.md")


def entries():
    """{id: {"topic", "question", "bcc", "bpftrace", "differs", "untested", "kernel": [(function, probe)]}},
    read in the layout src/cookbook/cookbook.cpp reads."""
    out, topic, cur = {}, None, None
    with open(DOC) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("## "):
                topic, cur = line[3:].split(": ", 1)[0], None
            elif line.startswith("### "):
                eid, question = line[4:].split(": ", 1)
                cur = out[eid] = {"topic": topic, "question": question, "bcc": "", "bpftrace": "", "differs": "",
                                  "untested": "", "kernel": [], "book": []}
            elif line.startswith("- ") and cur is not None:
                key, value = line[2:].split(": ", 1)
                if key in ("bcc", "bpftrace"):
                    cur[key] = value.strip("`")
                elif key == "kernel":
                    fn, probe = value.split(" -> ")
                    cur["kernel"].append((fn.strip("`"), probe.strip("`")))
                elif key == "book":
                    cur["book"].append(value)
                else:
                    cur[key] = value
    return out


def argv(command, *extra):
    """The command's words, `bpfscope` being the binary under test, with
    global options `extra` (-f json) put right after it."""
    words = shlex.split(command)
    assert words[0] == "bpfscope", command
    return [BPFSCOPE] + list(extra) + words[1:]


class Result:
    """A run's maps as printed last ({"@name": value}), printf lines, a
    tool's events (trace: {"pid", ..., "msg"}), and
    what argdist printed each interval summed up: `hists` ({"@expr":
    buckets}) and `counts` ({value: count}, a -C table's events)."""

    def __init__(self, run):
        self.run = run
        self.maps, self.printf, self.events, self.hists, self.counts = {}, [], [], {}, {}
        for line in run.lines:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("type") in ("map", "hist", "stats"):
                self.maps.update(msg["data"])
            if msg.get("type") == "hist":
                for name, buckets in msg["data"].items():
                    if isinstance(buckets, list):
                        self.hists[name] = add_buckets(self.hists.get(name, []), buckets)
            elif msg.get("type") == "printf":
                self.printf.append(msg["data"])
            elif msg.get("type") == "event":
                self.events.append(msg["data"])
            elif msg.get("type") == "table":
                for row in msg["data"]:
                    # argdist: {"count", "event": {"EXPR": value}}; funccount: {"func", "count"}.
                    fields = row["event"] if "event" in row else {k: v for k, v in row.items() if k != "count"}
                    value = ",".join(str(v) for v in fields.values())
                    self.counts[value] = self.counts.get(value, 0) + row["count"]

    def __repr__(self):
        return repr(self.run)


def run_json(command, work, settle=0.3):
    """Runs `command` with -f json around `work()`, then stops it (SIGINT)."""
    p = start_tool(argv(command, "-f", "json")[1:])
    ticks = lambda ls: sum(1 for l in ls if l and l.startswith('{"type": "time"'))
    try:
        work()
        time.sleep(settle)
        # argdist prints each second and nothing when stopped: one more
        # print after the work holds all of it.
        if " argdist " in command:
            seen = ticks(p.lines)
            assert p.wait_for(lambda ls: ticks(ls) > seen, 5), p.lines
    finally:
        p.stop()
    run = p.finish()
    assert run.rc == 0, run
    return Result(run)


def add_buckets(a, b):
    """Two -f json histograms added bucket by bucket."""
    out = {(x.get("min"), x.get("max")): x["count"] for x in a}
    for x in b:
        k = (x.get("min"), x.get("max"))
        out[k] = out.get(k, 0) + x["count"]
    return [dict(([("min", lo)] if lo is not None else []) + ([("max", hi)] if hi is not None else []), count=c)
            for (lo, hi), c in out.items()]


def hist_total(buckets, low=None, high=None):
    """The count of a -f json histogram's buckets within [low, high]."""
    return sum(b["count"] for b in buckets
               if (low is None or b.get("min", -1) >= low) and (high is None or b.get("max", high + 1) <= high))


def keyed(m, pred):
    """The sum of a keyed map's values whose key string `pred` accepts."""
    return sum(v for k, v in m.items() if pred(k))
