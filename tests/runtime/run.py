#!/usr/bin/env python3
"""Runs the runtime cases: real programs on the real kernel, output checked.

Case files (tests/runtime/cases/*.cases) hold blocks of directives, one per
line; a NAME line starts a new case. See tests/runtime/README.md.
"""
import argparse
import difflib
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
MULTI = {"PROG", "EXPECT", "EXPECT_REGEX", "EXPECT_NONE", "STDERR", "STDERR_REGEX", "SETUP", "CLEANUP", "ENV", "AFTER"}
SINGLE = {"NAME", "RUN", "SCRIPT", "ARGS", "TAIL", "TIMEOUT", "EXIT", "SIGNAL", "REQUIRES", "EXPECT_FILE",
          "STDIN", "OUTPUT_FILE", "WAIT", "DIFF_BPFTRACE"}

# DIFF_BPFTRACE normalizations (see README.md). The defaults undo the known
# 0.17 versus 0.24+ layout differences (REFERENCE.md section 9).
DIFF_DEFAULT = ["attaching", "rstrip", "blank17"]
DIFF_KNOWN = {"attaching", "rstrip", "blank17", "noblank", "sort"}
BPFTRACE = "bpftrace"
ATTACHING = re.compile(r"^Attaching \d+ probes?\.\.\.$")
MAP_VALUE_LINE = re.compile(r"^@\w*(\[.*\])?: \S")


def parse(path):
    cases, cur = [], None
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, _, value = line.partition(" ")
            if key not in MULTI | SINGLE:
                raise SystemExit(f"{path}:{lineno}: unknown directive {key}")
            if key == "NAME":
                cur = {"NAME": value, "_where": f"{os.path.basename(path)}:{lineno}"}
                cases.append(cur)
                continue
            if cur is None:
                raise SystemExit(f"{path}:{lineno}: directive before NAME")
            if key == "DIFF_BPFTRACE":
                diff_norms(value, f"{path}:{lineno}")
            if key in MULTI:
                cur.setdefault(key, []).append(value)
            else:
                cur[key] = value
    for case in cases:
        # Several PROG lines are one program, a line each.
        if "PROG" in case:
            case["PROG"] = "\n".join(case["PROG"])
    return cases


def diff_norms(value, where="DIFF_BPFTRACE"):
    """The normalizations a DIFF_BPFTRACE value asks for: the defaults, plus
    every listed name, minus every name listed as -name."""
    norms = list(DIFF_DEFAULT)
    for word in value.replace(",", " ").split():
        name = word.lstrip("-+")
        if name not in DIFF_KNOWN:
            raise SystemExit(f"{where}: unknown DIFF_BPFTRACE normalization {name!r}"
                             f" (known: {', '.join(sorted(DIFF_KNOWN))})")
        if word.startswith("-"):
            norms = [n for n in norms if n != name]
        elif name not in norms:
            norms.append(name)
    return norms


def normalize_pair(ours, theirs, norms):
    """Normalizes bpfscope's stdout (ours) and bpftrace's (theirs)."""
    if "attaching" in norms:
        theirs = [l for l in theirs if not ATTACHING.match(l)]
    if "rstrip" in norms:
        ours = [l.rstrip() for l in ours]
        theirs = [l.rstrip() for l in theirs]
    if "noblank" in norms:
        ours = [l for l in ours if l]
        theirs = [l for l in theirs if l]
    if "blank17" in norms:
        # 0.17 prints an empty line after each avg/stats map and one for each
        # empty map. Drop such a line from bpftrace's output when bpfscope's
        # does not have it there: an empty line that follows a map entry line
        # ("@m[k]: v") or another empty line.
        kept, j = [], 0
        for i, l in enumerate(theirs):
            if j < len(ours) and ours[j] == l:
                kept.append(l)
                j += 1
                continue
            prev = theirs[i - 1] if i else None
            if l == "" and prev is not None and (prev == "" or MAP_VALUE_LINE.match(prev)):
                continue
            # A real difference: keep the rest as is for the diff.
            kept.extend(theirs[i:])
            break
        theirs = kept
    if "sort" in norms:
        ours, theirs = sorted(ours), sorted(theirs)
    return ours, theirs


def full_line_match(lines, text):
    return any(l == text for l in lines)


def regex_match(lines, pattern):
    r = re.compile(pattern)
    return any(r.search(l) for l in lines)


def case_env(case):
    env = dict(os.environ)
    # The attach marker, which bpfscope prints on stdout: a RUN command gets
    # it only when the case waits for it (AFTER, SIGNAL), so that its own
    # pipes (| head -1) see only the program's output.
    if "RUN" not in case or "AFTER" in case or "SIGNAL" in case:
        env[NOTIFY] = "1"
    for kv in case.get("ENV", []):
        k, _, v = kv.partition("=")
        env[k] = v
    return env


def prog_argv(case, binary):
    if "SCRIPT" in case:
        # A script file under tests/runtime/scripts, run as a user would.
        program = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", case["SCRIPT"])]
    else:
        program = ["-e", case["PROG"].replace("{helpers}", os.environ.get("HELPERS", ""))]
    return ([binary] + shlex.split(os.path.expandvars(case.get("ARGS", ""))) + program
            + shlex.split(os.path.expandvars(case.get("TAIL", ""))))


def execute(case, argv, shell, workdir, env, notify_on_stderr=False, settle=0.0):
    """Runs SETUP, the command (with AFTER, WAIT, SIGNAL), CLEANUP.

    Returns (stdout lines, stderr text, exit status, timed out). bpftrace
    writes the attach notification to stderr (notify_on_stderr), and only
    then runs BEGIN: settle is a pause after it, before AFTER and SIGNAL."""
    for cmd in case.get("SETUP", []):
        subprocess.run(cmd, shell=True, cwd=workdir, check=True, timeout=60, env=env)
    out_file = None
    if "OUTPUT_FILE" in case:
        out_file = os.path.join(workdir, case["OUTPUT_FILE"])
    timeout = float(case.get("TIMEOUT", "10"))
    stdin = subprocess.PIPE if "STDIN" in case else subprocess.DEVNULL
    proc = subprocess.Popen(argv, shell=shell, cwd=workdir, env=env, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    if "STDIN" in case:
        proc.stdin.write(case["STDIN"].encode().decode("unicode_escape"))
        proc.stdin.close()
    stdout_lines, stderr_chunks = [], []
    attached = threading.Event()

    def read_out():
        for line in proc.stdout:
            line = line.rstrip("\n")
            if line == NOTIFY:
                attached.set()
                continue
            stdout_lines.append(line)
        attached.set()

    def read_err():
        if not notify_on_stderr:
            stderr_chunks.append(proc.stderr.read())
            return
        for line in proc.stderr:
            if line.rstrip("\n") == NOTIFY:
                attached.set()
                continue
            stderr_chunks.append(line)

    threads = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    if case.get("AFTER") or "SIGNAL" in case:
        # Wait for attach (the notify line), or the file to get it with -o.
        while not attached.is_set() and time.monotonic() < deadline:
            if out_file and os.path.exists(out_file):
                with open(out_file) as f:
                    if NOTIFY in f.read():
                        attached.set()
                        break
            if proc.poll() is not None:
                break
            attached.wait(0.02)
        if settle:
            time.sleep(settle)
        for cmd in case.get("AFTER", []):
            subprocess.run(cmd, shell=True, cwd=workdir, env=env, timeout=max(1, deadline - time.monotonic()))
        if "WAIT" in case:
            time.sleep(float(case["WAIT"]))
        if "SIGNAL" in case and proc.poll() is None:
            os.kill(proc.pid, getattr(signal, "SIG" + case["SIGNAL"]))
    try:
        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for t in threads:
        t.join()
    stderr = "".join(stderr_chunks)
    if out_file:
        with open(out_file) as f:
            stdout_lines = [l for l in f.read().split("\n") if l != NOTIFY]
    for cmd in case.get("CLEANUP", []):
        subprocess.run(cmd, shell=True, cwd=workdir, env=env, timeout=60)
    return stdout_lines, stderr, proc.returncode, timed_out


def diff_bpftrace(case, ours):
    """Runs the PROG under bpftrace and compares its normalized stdout with
    bpfscope's. Returns (errors, notes)."""
    if "PROG" not in case:
        return ["DIFF_BPFTRACE needs a PROG case"], []
    binary = shutil.which(BPFTRACE)
    if not binary:
        return [], [f"{BPFTRACE} is not installed: the diff against it was skipped"]
    with tempfile.TemporaryDirectory(prefix="bpfscope-case-bpftrace-") as wd:
        theirs, their_err, status, timed_out = execute(case, prog_argv(case, binary), False, wd, case_env(case),
                                                     notify_on_stderr=True, settle=0.3)
    # bpftrace's stderr is ignored (0.17 warns about RLIMIT_MEMLOCK here).
    errors = []
    if timed_out:
        errors.append(f"bpftrace timed out after {case.get('TIMEOUT', '10')}s")
    norms = diff_norms(case["DIFF_BPFTRACE"])
    a, b = normalize_pair(ours, theirs, norms)
    if a != b:
        diff = difflib.unified_diff(b, a, "bpftrace", "bpfscope", lineterm="", n=2)
        errors.append(f"stdout differs from bpftrace's (normalized: {' '.join(norms)}, bpftrace exit {status}):")
        errors.extend("  " + l for l in diff)
        errors.append("bpftrace's stderr:")
        errors.extend("  " + l for l in their_err.rstrip("\n").split("\n")[:20])
    return errors, []


def run_case(case, bpfscope, workdir):
    env = case_env(case)
    if "PROG" in case or "SCRIPT" in case:
        argv = prog_argv(case, bpfscope)
        shell = False
    else:
        argv = case["RUN"].replace("{bpfscope}", shlex.quote(bpfscope))
        shell = True
    timeout = float(case.get("TIMEOUT", "10"))
    stdout_lines, stderr, returncode, timed_out = execute(case, argv, shell, workdir, env)

    errors = []
    if timed_out:
        errors.append(f"timed out after {timeout}s")
    want_exit = int(case.get("EXIT", "0"))
    if not timed_out and returncode != want_exit:
        errors.append(f"exit status {returncode}, expected {want_exit}")
    pos = 0
    for e in case.get("EXPECT", []):
        # EXPECT lines must appear in this order.
        try:
            pos = stdout_lines.index(e, pos) + 1
        except ValueError:
            errors.append(f"missing line (in order): {e!r}")
    for e in case.get("EXPECT_REGEX", []):
        if not regex_match(stdout_lines, e):
            errors.append(f"no line matches: {e!r}")
    for e in case.get("EXPECT_NONE", []):
        if regex_match(stdout_lines, e):
            errors.append(f"a line matches the forbidden pattern: {e!r}")
    err_lines = stderr.split("\n")
    for e in case.get("STDERR", []):
        if not full_line_match(err_lines, e):
            errors.append(f"missing stderr line: {e!r}")
    for e in case.get("STDERR_REGEX", []):
        if not regex_match(err_lines, e):
            errors.append(f"no stderr line matches: {e!r}")
    if "EXPECT_FILE" in case:
        with open(case["EXPECT_FILE"].replace("{cases}", CASES_DIR)) as f:
            want = f.read().rstrip("\n").split("\n")
        got = "\n".join(stdout_lines).rstrip("\n").split("\n")
        if want != got:
            errors.append("stdout differs from " + case["EXPECT_FILE"])
    checks = sum(len(case.get(k, [])) for k in ("EXPECT", "EXPECT_REGEX", "EXPECT_NONE", "STDERR", "STDERR_REGEX"))
    checks += "EXPECT_FILE" in case
    checks += "DIFF_BPFTRACE" in case
    if checks == 0:
        errors.append("the case checks no output: add an EXPECT")
    notes = []
    if "DIFF_BPFTRACE" in case:
        diff_errors, notes = diff_bpftrace(case, stdout_lines)
        errors += diff_errors
    return errors, stdout_lines, stderr, notes


CASES_DIR = ""


def main():
    global CASES_DIR
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpfscope", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--helpers", default="", help="directory of the helper programs ({helpers} in cases)")
    ap.add_argument("cases", help="the cases directory, or one .cases file in it")
    args = ap.parse_args()
    CASES_DIR = os.path.abspath(args.cases)
    files = sorted(glob.glob(os.path.join(CASES_DIR, "*.cases")))
    if os.path.isfile(CASES_DIR):
        files, CASES_DIR = [CASES_DIR], os.path.dirname(CASES_DIR)
    os.environ["HELPERS"] = os.path.abspath(args.helpers) if args.helpers else ""
    # Script helpers (python) live in the source tree beside the cases.
    os.environ["HELPERS_SRC"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers")
    bpfscope = os.path.abspath(args.bpfscope)
    passed = failed = skipped = 0
    for path in files:
        for case in parse(path):
            name = f"{os.path.basename(path)[:-6]}.{case['NAME']}"
            if args.filter and args.filter not in name:
                continue
            req = case.get("REQUIRES")
            if req and subprocess.run(req, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
                print(f"SKIP {name} (requires: {req})")
                skipped += 1
                continue
            with tempfile.TemporaryDirectory(prefix="bpfscope-case-") as wd:
                start = time.monotonic()
                try:
                    errors, out, err, notes = run_case(case, bpfscope, wd)
                except Exception as e:  # a broken SETUP, a bad regex
                    errors, out, err, notes = [f"runner error: {e}"], [], "", []
                took = time.monotonic() - start
            if errors:
                failed += 1
                print(f"FAIL {name} ({case['_where']}, {took:.2f}s)")
                for e in errors:
                    print(f"    {e}")
                print("    --- stdout ---")
                for l in out[:40]:
                    print(f"    {l}")
                print("    --- stderr ---")
                for l in err.split("\n")[:20]:
                    print(f"    {l}")
            else:
                passed += 1
                print(f"ok   {name} ({took:.2f}s)")
            for n in notes:
                print(f"    note: {n}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
