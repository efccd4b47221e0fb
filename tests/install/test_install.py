"""bpfscope installed as a system tool (issue 21): `cmake --install` into a
temporary DESTDIR and the Debian package of `cpack -G DEB`, both from the
build directory ctest gives in $BPFSCOPE_BUILD (nothing is rebuilt).

- the installed binary runs (--version, a tool from the installed tool
  files, the HTTP module from lib/bpfscope);
- the man pages read with `man -l`, lint clean with mandoc and groff, and
  `man tcplife` has its options, columns and examples;
- the bash and zsh completions load and complete a tool name, a tool's
  option and tracepoint: names;
- the .deb: dpkg-deb -I/-c, lintian, and unpacked with dpkg -x: every
  library its ELF files load comes from a package it depends on, and the
  unpacked binary runs.

Runs as root (the tools load BPF programs).
"""
import glob
import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest

BUILD = os.path.abspath(os.environ.get("BPFSCOPE_BUILD", os.path.join(os.path.dirname(__file__), "../../build-release")))
PREFIX = "/usr/local"


def run(cmd, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(cmd, **kw)


def mount_tracefs():
    if not os.path.exists("/sys/kernel/tracing/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], stderr=subprocess.DEVNULL)


def tool_names():
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(BUILD, "man", "*.8.gz"))
                  if not p.endswith("/bpfscope.8.gz"))


class Installed:
    """One DESTDIR install shared by the tests of this file."""
    root = None

    @classmethod
    def get(cls):
        if cls.root is None:
            cls.tmp = tempfile.TemporaryDirectory(prefix="bpfscope-install-")
            r = run(["cmake", "--install", BUILD], env=dict(os.environ, DESTDIR=cls.tmp.name))
            if r.returncode != 0:
                raise AssertionError("cmake --install failed:\n" + r.stdout + r.stderr)
            cls.root = cls.tmp.name
        return cls.root


def check_runs(test, prefix):
    """The binary under `prefix` prints its version, runs a tool from the
    installed tool files, and loads its HTTP module."""
    binary = os.path.join(prefix, "bin/bpfscope")
    r = run([binary, "--version"])
    test.assertEqual(r.returncode, 0, r.stderr)
    # bpftrace prints "bpftrace v0.24.0": the same first words, then the revision.
    test.assertRegex(r.stdout, r"^bpfscope v\d+\.\d+\.\d+ \(git ([0-9a-f]{7,}(-dirty)?|unknown)(, \d{4}-\d\d-\d\d)?\)\n$")
    mount_tracefs()
    tool = os.path.join(prefix, "share/bpfscope/tools/syscount.bt")
    test.assertTrue(os.path.isfile(tool))
    # syscount counts the child's system calls and prints them when it exits.
    r = run([binary, "-c", "/bin/ls /", tool])
    test.assertEqual(r.returncode, 0, r.stderr)
    test.assertRegex(r.stdout, r"SYSCALL +COUNT")
    test.assertRegex(r.stdout, r"\n(openat|read|write|close|mmap) +[1-9]\d*\n")
    # The tool file imports a library file: found beside it or built in.
    r = run([binary, os.path.join(prefix, "share/bpfscope/tools/tcpstates.bt"), "-h"])
    test.assertEqual(r.returncode, 0, r.stderr)
    # --prometheus dlopens bpfscope-http.so from ../lib/bpfscope.
    r = run([binary, "-q", "--prometheus", "0", "-e", "interval:ms:100 { @x = 1; exit(); }"])
    test.assertEqual(r.returncode, 0, r.stderr)
    test.assertIn("Serving metrics on http://127.0.0.1:", r.stderr)


class TestInstall(unittest.TestCase):
    def setUp(self):
        self.root = Installed.get()
        self.prefix = self.root + PREFIX

    def test_files(self):
        p = self.prefix
        for rel in ["bin/bpfscope", "lib/bpfscope/bpfscope-http.so", "share/man/man8/bpfscope.8.gz",
                    "share/man/man8/tcplife.8.gz", "share/bash-completion/completions/bpfscope",
                    "share/zsh/site-functions/_bpfscope", "share/bpfscope/tools/tcplife.bt",
                    "share/bpfscope/tools/lib/tcp.bt", "share/doc/bpfscope/copyright"]:
            self.assertTrue(os.path.isfile(os.path.join(p, rel)), rel)
        self.assertTrue(os.access(os.path.join(p, "bin/bpfscope"), os.X_OK))
        # One page per tool file.
        tools = sorted(os.path.basename(t)[:-3] for t in glob.glob(os.path.join(p, "share/bpfscope/tools/*.bt")))
        pages = sorted(os.path.basename(m)[:-5] for m in glob.glob(os.path.join(p, "share/man/man8/*.8.gz")))
        self.assertEqual(pages, sorted(tools + ["bpfscope"]))

    def test_runs(self):
        check_runs(self, self.prefix)

    def test_man_pages_lint_clean(self):
        pages = sorted(glob.glob(os.path.join(self.prefix, "share/man/man8/*.8.gz")))
        self.assertGreater(len(pages), 10)
        env = dict(os.environ, MANWIDTH="100", LANG="C.UTF-8", MANPAGER="cat", PAGER="cat")
        for page in pages:
            with self.subTest(page=os.path.basename(page)):
                r = run(["man", "-l", page], env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stderr, "")
                text = re.sub(r".\x08", "", r.stdout)
                self.assertRegex(text, r"(?m)^NAME\n +\S+ +- +\S")
                if shutil.which("mandoc"):
                    r = run(["mandoc", "-T", "lint", "-W", "warning", page])
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                with gzip.open(page, "rt") as f:
                    text = f.read()
                r = run(["groff", "-ww", "-man", "-z", "-Tutf8"], input=text)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stderr, "")

    def man(self, name):
        env = dict(os.environ, MANPATH=os.path.join(self.prefix, "share/man"), MANWIDTH="100", LANG="C.UTF-8",
                   MANPAGER="cat", PAGER="cat")
        r = run(["man", name], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Plain text: no overstriking.
        return re.sub(r".\x08", "", r.stdout)

    def test_man_tcplife(self):
        text = self.man("tcplife")
        for section in ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COLUMNS", "EXAMPLES", "SEE ALSO"]:
            self.assertRegex(text, r"(?m)^%s$" % section)
        self.assertRegex(text, r"tcplife - Trace the lifespan of TCP sessions")
        self.assertRegex(text, r"-p, --pid PID\s+Process ID to trace")
        self.assertRegex(text, r"-L, --localport LOCALPORT")
        self.assertRegex(text, r"\n\s+RX_KB\s")
        self.assertRegex(text, r"\n\s+MS\s")
        self.assertIn("bpfscope tcplife -p 1215", text)

    def test_man_bpfscope_is_the_help(self):
        text = self.man("bpfscope")
        helptext = run([os.path.join(self.prefix, "bin/bpfscope"), "--help"]).stdout
        # Every option of --help is in the page, as is every example.
        for opt in re.findall(r"(?m)^    (-[-\w]+)", helptext):
            self.assertRegex(text, r"(?m)^\s+%s\b" % re.escape(opt), opt)
        for var in re.findall(r"(?m)^    (BPFTRACE_\w+)", helptext):
            self.assertIn(var, text)
        for section in ["SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXAMPLES", "TOOLS"]:
            self.assertRegex(text, r"(?m)^%s$" % section)
        self.assertRegex(text, r"tcplife\(8\)")

    def complete_bash(self, line):
        script = os.path.join(self.prefix, "share/bash-completion/completions/bpfscope")
        binary = os.path.join(self.prefix, "bin/bpfscope")
        words = line.split(" ")
        words[0] = binary
        prog = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; '
                'COMP_POINT=${#COMP_LINE}; complete -p bpfscope >/dev/null || exit 3; _bpfscope; '
                'printf "%s\\n" "${COMPREPLY[@]}"')
        r = run(["bash", "-c", prog, "bash", script] + words)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        return r.stdout.split()

    def test_bash_completion(self):
        mount_tracefs()
        self.assertIn("tcplife", self.complete_bash("bpfscope tcpl"))
        self.assertIn("tcpconnect", self.complete_bash("bpfscope -q tcpc"))
        self.assertIn("--dry-run", self.complete_bash("bpfscope --dr"))
        self.assertIn("--localport", self.complete_bash("bpfscope tcplife --loc"))
        self.assertEqual(["json"], self.complete_bash("bpfscope -f js"))
        # bash's word starts after the last ':' of the one typed.
        self.assertIn("tracepoint:", self.complete_bash("bpfscope -l trace"))
        self.assertIn("sched:", self.complete_bash("bpfscope -l tracepoint:sch"))
        self.assertIn("sched_switch", self.complete_bash("bpfscope -l tracepoint:sched:sched_sw"))
        self.assertIn("sys_enter_openat", self.complete_bash("bpfscope funccount tracepoint:syscalls:sys_enter_open"))

    def test_zsh_completion(self):
        if not shutil.which("zsh"):
            self.skipTest("zsh is not installed")
        mount_tracefs()
        fdir = os.path.join(self.prefix, "share/zsh/site-functions")
        binary = os.path.join(self.prefix, "bin/bpfscope")
        # compinit finds the function for the bpfscope command.
        with tempfile.TemporaryDirectory() as home:
            r = run(["zsh", "-f", "-c", 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -d "$2/zcd"; '
                     'print -r -- $_comps[bpfscope]', "zsh", fdir, home])
            self.assertEqual(r.stdout.strip(), "_bpfscope", r.stderr)

        def complete(line):
            # The function runs with compadd and _files standing in for
            # zsh's (they print the candidates) on words as typed.
            prog = ('compadd() { while [[ $1 == -* && $1 != -- ]]; do [[ $1 == -S ]] && shift; shift; done; '
                    '[[ $1 == -- ]] && shift; print -rl -- "$@"; }; _files() { :; }; _pids() { :; }; '
                    'src=$1; shift; words=("$@"); CURRENT=$#; source "$src"')
            words = line.split(" ")
            words[0] = binary
            r = run(["zsh", "-f", "-c", prog, "zsh", os.path.join(fdir, "_bpfscope")] + words)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.split()

        self.assertIn("tcplife", complete("bpfscope tcpl"))
        self.assertIn("--localport", complete("bpfscope tcplife --loc"))
        self.assertIn("tracepoint:sched:", complete("bpfscope -l tracepoint:sch"))
        self.assertIn("tracepoint:sched:sched_switch", complete("bpfscope -l tracepoint:sched:sched_sw"))


class TestDebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="bpfscope-deb-")
        r = run(["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", cls.tmp.name],
                timeout=300)
        if r.returncode != 0:
            raise AssertionError("cpack failed:\n" + r.stdout + r.stderr)
        debs = glob.glob(os.path.join(cls.tmp.name, "*.deb"))
        assert len(debs) == 1, debs
        cls.deb = debs[0]
        info = run(["dpkg-deb", "-f", cls.deb, "Depends"]).stdout
        cls.depends = {re.sub(r"\s*\(.*\)", "", alt).strip().split(":")[0]
                       for dep in info.split(",") for alt in dep.split("|") if alt.strip()}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_info(self):
        r = run(["dpkg-deb", "-I", self.deb])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"Package: bpfscope\n")
        self.assertRegex(r.stdout, r"Version: \d+\.\d+\.\d+")
        self.assertRegex(r.stdout, r"Depends: .*libc6")
        for field in ["Depends", "Pre-Depends", "Recommends"]:
            value = run(["dpkg-deb", "-f", self.deb, field]).stdout
            self.assertNotRegex(value.lower(), r"llvm|clang", field)

    def test_contents(self):
        r = run(["dpkg-deb", "-c", self.deb])
        self.assertEqual(r.returncode, 0, r.stderr)
        for path in ["./usr/bin/bpfscope", "./usr/lib/bpfscope/bpfscope-http.so", "./usr/share/man/man8/bpfscope.8.gz",
                     "./usr/share/man/man8/tcplife.8.gz", "./usr/share/bash-completion/completions/bpfscope",
                     "./usr/share/zsh/vendor-completions/_bpfscope", "./usr/share/bpfscope/tools/tcplife.bt",
                     "./usr/share/doc/bpfscope/copyright"]:
            self.assertRegex(r.stdout, r"\s%s\n" % re.escape(path))
        self.assertNotIn("/usr/local", r.stdout)

    def test_lintian(self):
        if not shutil.which("lintian"):
            self.skipTest("lintian is not installed")
        r = run(["lintian", "--no-tag-display-limit", self.deb], timeout=300)
        # Errors fail; warnings are shown.
        print(r.stdout)
        errors = [l for l in r.stdout.splitlines() if l.startswith("E:")]
        self.assertEqual(errors, [], r.stdout + r.stderr)

    @staticmethod
    def owner(lib):
        """The package that has the file `lib` (dpkg -S), or None."""
        for path in [lib, os.path.realpath(lib)]:
            s = run(["dpkg", "-S", path])
            if s.returncode == 0:
                return s.stdout.split(":")[0].strip()
        return None

    def closure(self):
        """The declared dependencies and, recursively, theirs (as installed)."""
        seen, todo = set(), list(self.depends)
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            r = run(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}", p])
            for dep in r.stdout.split(","):
                for alt in dep.split("|"):
                    name = re.sub(r"\s*\(.*\)", "", alt).strip().split(":")[0]
                    if name:
                        todo.append(name)
        return seen

    def test_unpacked_libraries_and_run(self):
        with tempfile.TemporaryDirectory(prefix="bpfscope-unpacked-") as root:
            r = run(["dpkg", "-x", self.deb, root])
            self.assertEqual(r.returncode, 0, r.stderr)
            elfs = [os.path.join(root, "usr/bin/bpfscope")] + glob.glob(os.path.join(root, "usr/lib/bpfscope/*.so"))
            self.assertEqual(len(elfs), 2)
            closure = self.closure()
            for elf in elfs:
                # What the file itself needs (DT_NEEDED) comes from a declared
                # dependency; all that ldd loads, from those or theirs.
                needed = re.findall(r"NEEDED\s+(\S+)", run(["objdump", "-p", elf]).stdout)
                self.assertTrue(needed, elf)
                r = run(["ldd", elf])
                self.assertEqual(r.returncode, 0, r.stderr)
                for line in r.stdout.splitlines():
                    line = line.strip()
                    if line.startswith("linux-vdso"):
                        continue
                    self.assertNotIn("not found", line, elf)
                    m = re.match(r"\S+ => (\S+)", line) or re.match(r"(/\S+)", line)
                    self.assertIsNotNone(m, line)
                    lib = m.group(1)
                    owner = self.owner(lib)
                    self.assertIsNotNone(owner, "%s: no package has %s" % (elf, lib))
                    direct = os.path.basename(lib) in needed
                    self.assertIn(owner, self.depends if direct else closure,
                                  "%s loads %s of %s, not a dependency%s (%s)" %
                                  (os.path.basename(elf), lib, owner, "" if direct else " nor one of theirs",
                                   sorted(self.depends)))
            check_runs(self, os.path.join(root, "usr"))


if __name__ == "__main__":
    unittest.main()
