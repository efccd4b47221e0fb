#!/usr/bin/env python3
"""Run bpftrace's runtime suite (tests/runtime in a bpftrace checkout) against
bpfscope, the way bpftrace's own engine runs it against bpftrace.

  tests/peer/run.py --tests /path/to/bpftrace/tests [--bpfscope build-release/bpfscope]
                    [-j N] [--filter REGEX] [--results out.json]
  tests/peer/run.py --tests ... --classify       # print why each case is excluded
  tests/peer/run.py --tests ... --write-excluded # regenerate tests/peer/excluded.txt

Cases listed in tests/peer/excluded.txt are not run; the rest are "runnable".
See docs/peer.md for the policy and the current score.
"""

import argparse
import concurrent.futures
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import casefile  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXCLUDED_FILE = os.path.join(HERE, "excluded.txt")
ATTACH_MARKER = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
# bpftrace's engine allows this long for the marker before it counts the
# case's own TIMEOUT (which starts at the marker).
ATTACH_TIMEOUT = 10

PASS, FAIL, TIMEOUT = "pass", "fail", "timeout"


# ---------------------------------------------------------------- features

def machine_features(bpfscope):
    """REQUIRES_FEATURE name -> (present, why), checked on this machine.

    bpftrace's engine greps `bpftrace --info`; bpfscope's --info uses other
    words, so each feature is mapped to what this kernel and bpfscope offer.
    """
    try:
        info = subprocess.run([bpfscope, "--info"], capture_output=True, text=True,
                              timeout=30).stdout
    except OSError:
        info = ""

    def said(key):
        m = re.search(rf"^\s*{re.escape(key)}: (.*)$", info, re.M)
        return m.group(1).strip() if m else "not listed by bpfscope --info"

    def from_info(key):
        v = said(key)
        return (v.startswith("yes"), f"bpfscope --info: {key}: {v}")

    uname = os.uname().release
    return {
        "loop": from_info("loop"),
        "probe_read_kernel": from_info("probe_read_kernel"),
        "btf": from_info("btf"),
        "fentry": from_info("fentry"),
        "dpath": from_info("d_path"),
        "signal": from_info("send_signal"),
        "iter": from_info("tp_btf"),  # iterators load as BPF_PROG_TYPE_TRACING like tp_btf
        "libpath_resolv": (True, "bpfscope resolves uprobe:libc:... through ld.so.cache"),
        "dwarf": (False, "bpfscope has no DWARF (libdw) reader"),
        "dwunwind": (False, "bpfscope has no DWARF stack unwinder"),
        "blazesym": (False, "bpfscope does not use blazesym"),
        "kprobe_multi": (False, "bpfscope --info: kprobe: " + said("kprobe")),
        "kprobe_session": (False, "bpfscope --info: kprobe: " + said("kprobe")),
        "uprobe_multi": (False, "bpfscope attaches uprobes one by one (no uprobe_multi link)"),
        "aot": (False, "bpfscope has no ahead-of-time mode"),
        "skboutput": (False, "skboutput needs fentry; bpfscope --info: fentry: " + said("fentry")),
        "get_tai_ns": (True, f"bpf_ktime_get_tai_ns exists since Linux 6.1 (kernel {uname})"),
        "get_func_ip": from_info("get_func_ip"),
        "jiffies64": (True, f"bpf_jiffies64 exists since Linux 5.5 (kernel {uname})"),
        "lookup_percpu_elem": from_info("map_lookup_percpu_elem"),
    }


# ---------------------------------------------------------------- exclusion

# Probe kinds this kernel cannot attach: no kprobe PMU and no kprobe_events,
# fentry/fexit loads refused (EPERM), no hardware PMU. Hardware breakpoints
# (watchpoints) do work here, so watchpoint cases stay runnable.
UNAVAILABLE_PROBES = re.compile(
    r"(?:^|[\s,{}/;'\"])(kprobe|kretprobe|k|kr|fentry|fexit|kfunc|kretfunc|f|fr|"
    r"hardware|h)\s*:"
    r"(?!:)", re.M)
PROBE_REASONS = {
    "kprobe": "kprobe probes: this kernel has no kprobe PMU and no kprobe_events",
    "fentry": "fentry/fexit probes: this kernel refuses their loads (EPERM)",
    "hardware": "hardware probes: this machine has no hardware PMU",
}
PROBE_FAMILY = {"kprobe": "kprobe", "kretprobe": "kprobe", "k": "kprobe", "kr": "kprobe",
                "fentry": "fentry", "fexit": "fentry", "kfunc": "fentry", "kretfunc": "fentry",
                "f": "fentry", "fr": "fentry", "hardware": "hardware", "h": "hardware"}
TESTPROG = re.compile(r"\b(testprogs|testlibs)/([\w.-]+)")


def version_tuple(v):
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def exclusion_reason(case, features, tests_dir):
    """Why CASE cannot run here, or None. Checked in the order of the policy."""
    if not casefile.arch_allows(case.arch):
        return f"ARCH {'|'.join(case.arch)} (host: {' '.join(sorted(casefile.host_arch_tags()))})"
    kernel = version_tuple(os.uname().release)
    if case.min_kernel and version_tuple(case.min_kernel) > kernel:
        return f"MIN_KERNEL {case.min_kernel}"
    if case.max_kernel and version_tuple(case.max_kernel) < kernel:
        return f"MAX_KERNEL {case.max_kernel}"
    if case.skip_if_env_has and os.environ.get(case.skip_if_env_has[0]) == case.skip_if_env_has[1]:
        return "SKIP_IF_ENV_HAS %s=%s" % case.skip_if_env_has
    text = "\n".join([case.prog, case.run, case.after, case.setup, *case.befores, *case.requires])
    # A script file run by the case may name a test program itself.
    for script in re.findall(r"runtime/scripts/[\w.-]+", text):
        try:
            with open(os.path.join(tests_dir, script)) as f:
                text += "\n" + f.read()
        except OSError:
            pass
    progs = sorted({m.group(0) for m in TESTPROG.finditer(text)})
    if progs:
        return "needs bpftrace's test programs: " + ", ".join(progs)
    for f in sorted(case.features):
        have, why = features.get(f, (False, "unknown feature"))
        if not have:
            return f"REQUIRES_FEATURE {f}: {why}"
    for f in sorted(case.not_features):
        have, why = features.get(f, (True, "unknown feature"))
        if have:
            return f"REQUIRES_FEATURE !{f}: {why}"
    for req in case.requires:
        rc = subprocess.run(req, shell=True, cwd=tests_dir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL).returncode
        if rc != 0:
            return f"REQUIRES `{req}` fails here (exit {rc})"
    # A listing (-l, -lv, --list) attaches nothing: it runs whatever it names.
    if re.search(r"\{\{BPFTRACE\}\}[^|]*\s(-l|-lv|--list)\b", case.run):
        return None
    kinds = {PROBE_FAMILY[m.group(1)] for m in UNAVAILABLE_PROBES.finditer(case.prog or case.run)
             if m.group(1) in PROBE_FAMILY}
    if kinds:
        return "; ".join(PROBE_REASONS[k] for k in sorted(kinds))
    return None


def read_excluded(path=EXCLUDED_FILE):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            ident, _, reason = line.rstrip("\n").partition("\t")
            out[ident] = reason.strip()
    return out


def write_excluded(rows, path=EXCLUDED_FILE):
    with open(path, "w") as f:
        f.write("# Cases of bpftrace's tests/runtime that tests/peer/run.py does not run.\n"
                "# One per line: SUITE.NAME<TAB>reason. Generated by run.py --write-excluded;\n"
                "# hand-added lines end in '(by hand)' and are kept by it.\n")
        for ident, reason in rows:
            f.write(f"{ident}\t{reason}\n")


# ---------------------------------------------------------------- running

def command_for(case, bpfscope, nsenter=""):
    if case.run:
        cmd = case.run.replace("{{BPFTRACE}}", shlex.quote(bpfscope) + " --verify-llvm-ir")
    else:
        json_flags = " -q -f json" if case.expects and case.expects[0].mode == "json" else ""
        cmd = f"{shlex.quote(bpfscope)}{json_flags} --verify-llvm-ir -e {shlex.quote(case.prog)}"
    return (nsenter + " " + cmd) if nsenter else cmd


def check_expect(expect, output, case, tests_dir):
    try:
        if expect.mode in ("text", "text_none"):
            # The expected text must be a whole line, give or take blanks.
            found = re.search(rf"^\s*{re.escape(expect.value)}\s*$", output, re.M)
            return bool(found) == (expect.mode == "text")
        if expect.mode in ("regex", "regex_none"):
            found = re.search(expect.value, output, re.M)
            return bool(found) == (expect.mode == "regex")
        with open(os.path.join(tests_dir, expect.value)) as f:
            wanted = f.read().strip()
        got = output.strip()
        if expect.mode == "file":
            if case.localize_ts >= 0:
                wanted = time.strftime(wanted, time.localtime(case.localize_ts))
            return got == wanted
        # json: compared as data; .ndjson line by line, else one line.
        got_lines = got.splitlines()
        if expect.value.endswith(".ndjson"):
            want_lines = wanted.splitlines()
            return len(want_lines) == len(got_lines) and all(
                json.loads(a) == json.loads(b) for a, b in zip(got_lines, want_lines))
        return len(got_lines) == 1 and json.loads(got) == json.loads(wanted)
    except (OSError, ValueError, re.error):
        return False


def kill_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def finish(proc, grace=1.0):
    """Collect PROC's output, killing its group if it has not ended in GRACE s."""
    try:
        return proc.communicate(timeout=grace)[0] or ""
    except subprocess.TimeoutExpired:
        kill_group(proc, signal.SIGKILL)
        return proc.communicate()[0] or ""


def proc_comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def wait_until(cond, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    return None


def spawn(argv, shell=False):
    return subprocess.Popen(argv, shell=shell, start_new_session=True, text=True,
                            errors="backslashreplace",
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def shell_step(cmd, tests_dir):
    p = subprocess.run(cmd, shell=True, cwd=tests_dir, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return p.returncode, p.stdout


def start_befores(case, tests_dir):
    """Start the BEFORE processes and wait until each has exec'd its program.

    Returns (processes, nsenter prefix, first BEFORE's pid). bpftrace's engine
    matches children by comm through ps; we check each child's own comm, which
    is the same test but cannot see another case's children when run in
    parallel.
    """
    procs, nsenter = [], ""
    if case.new_pidns:
        first = spawn(["unshare", "--fork", "--pid", "--mount-proc", "-r", "--kill-child", "--"]
                      + case.befores[0].split())
        procs.append(first)

        def child():
            try:
                with open(f"/proc/{first.pid}/task/{first.pid}/children") as f:
                    return f.read().split()[0]
            except (OSError, IndexError):
                return None
        inner = wait_until(child, case.timeout)
        if not inner:
            raise TimeoutError("no process in the new pid namespace")
        nsenter = f"nsenter -p -m -t {inner}"
        for before in case.befores[1:]:
            words = before.split()
            argv = nsenter.split() + [os.path.abspath(os.path.join(tests_dir, x)) if "/" in x else x
                                      for x in words]
            p = spawn(argv)
            procs.append(p)
            # nsenter forks the program; wait until that child has exec'd it.
            want = os.path.basename(words[0])[:15]

            def started(p=p, want=want):
                try:
                    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                        return any(proc_comm(c) == want for c in f.read().split())
                except OSError:
                    return False
            if not wait_until(started, case.timeout):
                raise TimeoutError(f"BEFORE {before!r} did not start")
        return procs, nsenter, None
    for before in case.befores:
        argv = before.split()
        procs.append(subprocess.Popen(argv, cwd=tests_dir, start_new_session=True, text=True,
                                      errors="backslashreplace", stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT))
    # As in bpftrace's engine, a BEFORE's program is its last word (the
    # suite's BEFOREs are single paths), cut to the 15 bytes of a comm.
    for before, p in zip(case.befores, procs):
        want = os.path.basename(before.split()[-1])[:15]
        if not wait_until(lambda: proc_comm(p.pid) == want, case.timeout):
            raise TimeoutError(f"BEFORE {before!r} did not start")
    return procs, nsenter, procs[0].pid if procs else None


def run_case(case, bpfscope, tests_dir):
    """Run one case. Returns (status, detail dict)."""
    detail = {"command": "", "output": "", "rc": None, "failed": []}
    if case.setup:
        rc, out = shell_step(case.setup, tests_dir)
        if rc != 0:
            detail["failed"].append(f"SETUP failed: {out[-500:]}")
            return FAIL, detail

    befores, after, proc = [], None, None
    output, timed_out = "", False
    try:
        befores, nsenter, before_pid = start_befores(case, tests_dir)
        cmd = command_for(case, bpfscope, nsenter)
        if "{{BEFORE_PID}}" in cmd:
            cmd = cmd.replace("{{BEFORE_PID}}", str(before_pid))
        detail["command"] = cmd
        env = {"test": case.name, "__BPFTRACE_NOTIFY_PROBES_ATTACHED": "1",
               "__BPFTRACE_NOTIFY_AOT_PORTABILITY_DISABLED": "1",
               "PATH": os.environ.get("PATH", "")}
        env.update(case.env)
        proc = subprocess.Popen(cmd, shell=True, cwd=tests_dir, env=env, start_new_session=True,
                                text=True, errors="backslashreplace",
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines = queue.Queue()

        def pump():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        deadline = time.monotonic() + ATTACH_TIMEOUT
        attached = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            try:
                line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line is None:
                break
            output += line
            if not attached and line == ATTACH_MARKER + "\n":
                attached = True
                if case.whole_output:
                    output = ""
                deadline = time.monotonic() + case.timeout
                if case.after:
                    after_cmd = case.after
                    if case.new_pidns:
                        after_cmd = nsenter + " " + after_cmd
                    after = subprocess.Popen(after_cmd, shell=True, cwd=tests_dir,
                                             start_new_session=True, text=True,
                                             errors="backslashreplace",
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if timed_out:
            # SIGTERM first, as a user would; the output so far may still pass.
            if proc.poll() is None:
                kill_group(proc, signal.SIGTERM)
            end = time.monotonic() + 1
            while time.monotonic() < end:
                try:
                    line = lines.get(timeout=max(0.01, end - time.monotonic()))
                except queue.Empty:
                    break
                if line is None:
                    break
                output += line
            if proc.poll() is None:
                kill_group(proc, signal.SIGKILL)
        reader.join(timeout=2)
        while not lines.empty():
            line = lines.get()
            if line is not None:
                output += line
        proc.wait()
    except TimeoutError as e:
        timed_out = True
        detail["failed"].append(str(e))
    finally:
        # BEFORE programs get a second to end by themselves, as in
        # bpftrace's engine, and are killed after that.
        for b in befores:
            detail.setdefault("before_output", []).append(finish(b)[-2000:])
        if proc and proc.poll() is None:
            kill_group(proc, signal.SIGKILL)
            proc.wait()
        if after:
            detail["after_output"] = finish(after)[-2000:]

    detail["output"] = output
    detail["rc"] = proc.returncode if proc else None
    if case.cleanup:
        rc, out = shell_step(case.cleanup, tests_dir)
        if rc != 0:
            detail["failed"].append(f"CLEANUP failed: {out[-500:]}")
            return FAIL, detail

    failed = [e for e in case.expects if not check_expect(e, output, case, tests_dir)]
    detail["failed"] += [f"{e.mode}: {e.value}" for e in failed]
    if timed_out:
        return (TIMEOUT if failed or not proc else PASS), detail
    if case.will_fail:
        if proc.returncode == 0:
            detail["failed"].append("exit 0, but the case expects failure (WILL_FAIL)")
            return FAIL, detail
    elif proc.returncode != case.return_code:
        detail["failed"].append(f"exit {proc.returncode}, expected {case.return_code}")
        return FAIL, detail
    return (FAIL if failed else PASS), detail


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", required=True,
                    help="the tests/ directory of a bpftrace checkout")
    ap.add_argument("--bpfscope", default="build-release/bpfscope")
    ap.add_argument("--filter", default=None, help="regex on SUITE.NAME")
    # One at a time, as bpftrace's engine runs them: cases that watch
    # system-wide events can also pass by accident beside one another (seen:
    # probe.uretprobe_order caught another case's bash).
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--results", help="write per-case results as JSON here")
    ap.add_argument("--no-rerun", action="store_true",
                    help="do not rerun failures one at a time")
    ap.add_argument("--classify", action="store_true",
                    help="print each excluded case with its computed reason and stop")
    ap.add_argument("--write-excluded", action="store_true",
                    help="rewrite excluded.txt from the computed reasons and stop")
    ap.add_argument("--as-bpftrace", action="store_true",
                    help="run bpfscope through a symlink named bpftrace, so that cases "
                         "expecting comm == \"bpftrace\" see that name")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    tests_dir = os.path.abspath(args.tests)
    bpfscope = os.path.abspath(args.bpfscope)
    cases = casefile.read_suite(tests_dir)
    if args.as_bpftrace:
        link_dir = tempfile.mkdtemp(prefix="peer-")
        os.symlink(bpfscope, os.path.join(link_dir, "bpftrace"))
        bpfscope = os.path.join(link_dir, "bpftrace")
    if os.geteuid() != 0:
        print("warning: not root; most cases will fail", file=sys.stderr)

    if args.classify or args.write_excluded:
        features = machine_features(bpfscope)
        kept = {k: v for k, v in read_excluded().items() if v.endswith("(by hand)")}
        rows = []
        for c in cases:
            reason = kept.get(c.ident) or exclusion_reason(c, features, tests_dir)
            if reason:
                rows.append((c.ident, reason))
        if args.write_excluded:
            write_excluded(rows)
        for ident, reason in rows:
            print(f"{ident}\t{reason}")
        print(f"{len(rows)} of {len(cases)} cases excluded, {len(cases) - len(rows)} runnable")
        return 0

    excluded = read_excluded()
    unknown = set(excluded) - {c.ident for c in cases}
    if unknown:
        print(f"note: {len(unknown)} excluded.txt entries name no case in this checkout",
              file=sys.stderr)
    runnable = [c for c in cases if c.ident not in excluded]
    if args.filter:
        runnable = [c for c in runnable if re.search(args.filter, c.ident)]

    results = {}
    lock = threading.Lock()

    def one(case):
        status, detail = run_case(case, bpfscope, tests_dir)
        with lock:
            results[case.ident] = (status, detail)
            mark = {PASS: "ok     ", FAIL: "FAILED ", TIMEOUT: "TIMEOUT"}[status]
            print(f"[{mark}] {case.ident}", flush=True)
            if status != PASS and args.verbose:
                print("    command: " + detail["command"])
                for f in detail["failed"]:
                    print("    " + f)
                print("    output: " + detail["output"][-1500:].replace("\n", "\n      "))

    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, runnable))
    failed = [c for c in runnable if results[c.ident][0] != PASS]
    flaky = []
    if failed and not args.no_rerun and args.jobs > 1:
        # bpftrace's engine runs cases one at a time; a case that failed beside
        # others gets a second, lone run, and that run decides.
        print(f"-- rerunning {len(failed)} failures one at a time")
        for c in failed:
            one(c)
            if results[c.ident][0] == PASS:
                flaky.append(c.ident)
    passed = sum(1 for c in runnable if results[c.ident][0] == PASS)
    bad = [c for c in runnable if results[c.ident][0] != PASS]

    print()
    for c in bad:
        status, detail = results[c.ident]
        print(f"[{status.upper():7}] {c.ident}")
    if flaky:
        print(f"passed only when run alone: {', '.join(flaky)}")
    total_runnable = sum(1 for c in cases if c.ident not in excluded)
    n_excluded = len(cases) - total_runnable
    scope = f" (filter {args.filter!r}: {len(runnable)} run)" if args.filter else ""
    print(f"\nbpftrace runtime suite: {passed} passed of {total_runnable} runnable; "
          f"{n_excluded} excluded of {len(cases)}{scope}; "
          f"{len(bad)} failed; {time.time() - start:.0f} s")
    if args.results:
        with open(args.results, "w") as f:
            json.dump({"passed": passed, "runnable": total_runnable, "excluded": n_excluded,
                       "total": len(cases), "flaky": flaky,
                       "cases": {k: {"status": s, **d} for k, (s, d) in results.items()}},
                      f, indent=1)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
