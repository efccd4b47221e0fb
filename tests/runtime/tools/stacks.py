"""Reading the stacks that profile, offcputime, wakeuptime and offwaketime
print, in libbpf-tools' layout: frames ("    name"), a "    -  COMM (PID)"
line, the count or microseconds, an empty line."""
import re

TASK = re.compile(r"^    -\s+(.*) \((\d+)\)$")


# The tracer's own frames at the top of a kernel stack taken in a
# tracepoint program. __traceiter_sched_switch shows up only while another
# tracer is attached to the same tracepoint, so one sleep could print under
# two stacks; they are dropped and such stacks merged (values summed).
TRACER = re.compile(r"^(bpf_prog_\w+|bpf_trace_run\d+|__traceiter_\w+)$")


def stacks(lines):
    """[(frames, comm, pid, value)] in the order first printed, the tracer's
    own frames left out."""
    merged = {}
    for frames, comm, pid, value in printed_stacks(lines):
        key = (tuple(f for f in frames if not TRACER.match(f)), comm, pid)
        merged[key] = merged.get(key, 0) + value
    return [(list(k[0]), k[1], k[2], v) for k, v in merged.items()]


def printed_stacks(lines):
    """[(frames, comm, pid, value)] in the order printed."""
    out, frames = [], []
    it = iter(lines)
    for line in it:
        m = TASK.match(line)
        if m:
            value = int(next(it).strip())
            out.append((frames, m.group(1), int(m.group(2)), value))
            frames = []
        elif line.startswith("    "):
            frames.append(line.strip())
        else:
            frames = []
    return out


def with_frame(parsed, name, pid=None):
    """The stacks that hold frame `name` (of process `pid`)."""
    return [s for s in parsed if name in s[0] and (pid is None or s[2] == pid)]
