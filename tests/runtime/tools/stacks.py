"""Reading the stacks that profile, offcputime, wakeuptime and offwaketime
print, in libbpf-tools' layout: frames ("    name"), a "    -  COMM (PID)"
line, the count or microseconds, an empty line."""
import re

TASK = re.compile(r"^    -\s+(.*) \((\d+)\)$")


def stacks(lines):
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
