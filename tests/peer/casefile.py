"""Reader for the case files of bpftrace's runtime suite (tests/runtime/*).

A file holds cases separated by blank lines. Lines starting with '#' are
comments. Each case line is `DIRECTIVE value`. A line indented by exactly the
width of the previous directive's name plus one continues a PROG, EXPECT or
EXPECT_REGEX value on a new line. The semantics follow bpftrace's
tests/runtime/engine (parser.py) at its 2026-08 HEAD; this is our own reading.
"""

import dataclasses
import os
import platform
import sys

DEFAULT_TIMEOUT = 5

# Directive -> expectation mode. EXPECT_FILE and EXPECT_JSON compare the
# whole output and may not be mixed with other expectations.
EXPECT_MODES = {
    "EXPECT": "text",
    "EXPECT_NONE": "text_none",
    "EXPECT_REGEX": "regex",
    "EXPECT_REGEX_NONE": "regex_none",
    "EXPECT_FILE": "file",
    "EXPECT_JSON": "json",
}
WHOLE_OUTPUT_MODES = ("file", "json")
CONTINUABLE = ("PROG", "EXPECT", "EXPECT_REGEX")
SKIPPED_DIRS = ("engine", "scripts", "outputs")


class CaseFileError(Exception):
    pass


@dataclasses.dataclass
class Expect:
    mode: str
    value: str


@dataclasses.dataclass
class Case:
    suite: str
    name: str
    path: str = ""
    run: str = ""
    prog: str = ""
    expects: list = dataclasses.field(default_factory=list)
    timeout: int = DEFAULT_TIMEOUT
    befores: list = dataclasses.field(default_factory=list)
    after: str = ""
    setup: str = ""
    cleanup: str = ""
    min_kernel: str = ""
    max_kernel: str = ""
    requires: list = dataclasses.field(default_factory=list)
    env: dict = dataclasses.field(default_factory=dict)
    arch: list = dataclasses.field(default_factory=list)
    features: set = dataclasses.field(default_factory=set)
    not_features: set = dataclasses.field(default_factory=set)
    will_fail: bool = False
    new_pidns: bool = False
    skip_if_env_has: tuple = None
    return_code: int = 0
    localize_ts: int = -1
    seq: int = 1  # 2 and up for a repeated NAME in the same suite

    @property
    def ident(self):
        tail = f"#{self.seq}" if self.seq > 1 else ""
        return f"{self.suite}.{self.name}{tail}"

    @property
    def whole_output(self):
        return any(e.mode in WHOLE_OUTPUT_MODES for e in self.expects)


def host_arch_tags():
    return {platform.machine().lower(), "be" if sys.byteorder == "big" else "le"}


def arch_allows(arch, tags=None):
    """ARCH a|b|!c: any positive tag must match the host, no negated tag may."""
    if not arch:
        return True
    tags = host_arch_tags() if tags is None else tags
    wanted = {a for a in arch if not a.startswith("!")}
    refused = {a[1:] for a in arch if a.startswith("!")}
    if wanted and not (wanted & tags):
        return False
    return not (refused & tags)


def _build_case(lines, suite, path):
    fields = {}
    case = Case(suite=suite, name="", path=path)
    return_code = None
    prev = ""
    for raw in lines:
        width = len(prev) + 1
        if prev in CONTINUABLE and raw[:width].isspace() and len(raw) > width - 1:
            text = raw[width:].rstrip("\n")
            if prev == "PROG":
                case.prog += "\n" + text
            else:
                case.expects[-1].value += "\n" + text
            continue
        parts = raw.strip().split(maxsplit=1)
        key = parts[0]
        value = parts[1] if len(parts) > 1 else ""
        prev = key
        fields[key] = True
        if key == "NAME":
            case.name = value
        elif key == "RUN":
            case.run = value
        elif key == "PROG":
            case.prog = value
        elif key in EXPECT_MODES:
            case.expects.append(Expect(EXPECT_MODES[key], value))
        elif key == "TIMEOUT":
            case.timeout = int(value.strip())
        elif key == "BEFORE":
            case.befores.append(value)
        elif key == "AFTER":
            case.after = value
        elif key == "SETUP":
            case.setup = value
        elif key == "CLEANUP":
            case.cleanup = value
        elif key == "MIN_KERNEL":
            case.min_kernel = value
        elif key == "MAX_KERNEL":
            case.max_kernel = value
        elif key == "REQUIRES":
            case.requires.append(value)
        elif key == "ENV":
            for pair in value.split():
                k, v = pair.split("=", 1)
                case.env[k] = v
        elif key == "ARCH":
            case.arch = [a.strip() for a in value.split("|")]
        elif key == "REQUIRES_FEATURE":
            for f in value.split():
                (case.not_features if f.startswith("!") else case.features).add(f.lstrip("!"))
        elif key == "WILL_FAIL":
            case.will_fail = True
        elif key == "NEW_PIDNS":
            case.new_pidns = True
        elif key == "SKIP_IF_ENV_HAS":
            k, v = value.split("=", 1)
            case.skip_if_env_has = (k, v)
        elif key == "RETURN_CODE":
            return_code = int(value.strip())
        elif key == "LOCALIZE_TIMESTAMPS":
            case.localize_ts = int(value.strip())
        else:
            raise CaseFileError(f"{path}: unknown directive {key}")

    where = f"{path}: case {case.name or '?'}"
    if not case.name:
        raise CaseFileError(f"{path}: a case without NAME")
    if bool(case.run) == bool(case.prog):
        raise CaseFileError(f"{where}: needs exactly one of RUN and PROG")
    if not case.expects and return_code is None:
        raise CaseFileError(f"{where}: expects nothing")
    if case.whole_output and len(case.expects) > 1:
        raise CaseFileError(f"{where}: EXPECT_FILE/EXPECT_JSON must stand alone")
    if return_code is not None and return_code != 0 and case.will_fail:
        raise CaseFileError(f"{where}: WILL_FAIL with a nonzero RETURN_CODE")
    case.return_code = return_code or 0
    return case


def read_file(path, suite=None):
    """All cases of one file, including those whose ARCH excludes this host."""
    suite = suite or os.path.basename(path)
    cases, pending = [], []
    with open(path) as f:
        lines = f.readlines()
    for i, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if line != "\n":
            pending.append(line)
        if (line == "\n" or i == len(lines)) and pending:
            cases.append(_build_case(pending, suite, path))
            pending = []
    return cases


def read_suite(tests_dir):
    """Every case under TESTS_DIR/runtime, sorted by suite then name."""
    root = os.path.join(tests_dir, "runtime")
    cases = []
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            if not name.startswith("."):
                cases.extend(read_file(os.path.join(dirpath, name)))
    # Names repeat within a suite (variants for other ARCHes); the second
    # of a name is NAME#2, in file order.
    cases.sort(key=lambda c: c.suite)
    seen = {}
    for c in cases:
        n = seen.get((c.suite, c.name), 0) + 1
        seen[(c.suite, c.name)] = n
        c.seq = n
    return cases
