#!/usr/bin/env python3
"""Runs the runtime cases: real programs on the real kernel, output checked.

Case files (tests/runtime/cases/*.cases) hold blocks of directives, one per
line; a NAME line starts a new case. See tests/runtime/README.md.
"""
import argparse
import glob
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

NOTIFY = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
MULTI = {"EXPECT", "EXPECT_REGEX", "EXPECT_NONE", "STDERR", "STDERR_REGEX", "SETUP", "CLEANUP", "ENV", "AFTER"}
SINGLE = {"NAME", "PROG", "RUN", "ARGS", "TAIL", "TIMEOUT", "EXIT", "SIGNAL", "REQUIRES", "EXPECT_FILE",
          "STDIN", "OUTPUT_FILE", "WAIT"}


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
            if key in MULTI:
                cur.setdefault(key, []).append(value)
            else:
                cur[key] = value
    return cases


def full_line_match(lines, text):
    return any(l == text for l in lines)


def regex_match(lines, pattern):
    r = re.compile(pattern)
    return any(r.search(l) for l in lines)


def run_case(case, bpfscope, workdir):
    env = dict(os.environ)
    env[NOTIFY] = "1"
    for kv in case.get("ENV", []):
        k, _, v = kv.partition("=")
        env[k] = v
    for cmd in case.get("SETUP", []):
        subprocess.run(cmd, shell=True, cwd=workdir, check=True, timeout=60, env=env)
    out_file = None
    if "PROG" in case:
        argv = ([bpfscope] + shlex.split(os.path.expandvars(case.get("ARGS", ""))) + ["-e", case["PROG"]]
                + shlex.split(os.path.expandvars(case.get("TAIL", ""))))
        shell = False
    else:
        argv = case["RUN"].replace("{bpfscope}", shlex.quote(bpfscope))
        shell = True
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
        stderr_chunks.append(proc.stderr.read())

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

    errors = []
    if timed_out:
        errors.append(f"timed out after {timeout}s")
    want_exit = int(case.get("EXIT", "0"))
    if not timed_out and proc.returncode != want_exit:
        errors.append(f"exit status {proc.returncode}, expected {want_exit}")
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
    if checks == 0:
        errors.append("the case checks no output: add an EXPECT")
    return errors, stdout_lines, stderr


CASES_DIR = ""


def main():
    global CASES_DIR
    ap = argparse.ArgumentParser()
    ap.add_argument("--bpfscope", required=True)
    ap.add_argument("--filter", default="")
    ap.add_argument("--helpers", default="", help="directory of the helper programs ({helpers} in cases)")
    ap.add_argument("cases")
    args = ap.parse_args()
    CASES_DIR = os.path.abspath(args.cases)
    os.environ["HELPERS"] = os.path.abspath(args.helpers) if args.helpers else ""
    bpfscope = os.path.abspath(args.bpfscope)
    files = sorted(glob.glob(os.path.join(CASES_DIR, "*.cases")))
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
                    errors, out, err = run_case(case, bpfscope, wd)
                except Exception as e:  # a broken SETUP, a bad regex
                    errors, out, err = [f"runner error: {e}"], [], ""
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
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
