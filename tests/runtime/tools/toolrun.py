"""Shared pieces of the tool tests: running a bpfscope tool (or its
libbpf-tools twin) around some traffic, and network namespaces joined by a
veth pair, created and deleted by the test itself.

The tests need root (they load BPF programs and create namespaces); the
binary comes from $BPFSCOPE (default build-release/bpfscope).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BPFSCOPE = os.environ.get("BPFSCOPE", os.path.join(HERE, "../../../build-release/bpfscope"))
MARKER = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"


def mount_tracefs():
    if not os.path.exists("/sys/kernel/tracing/events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], stderr=subprocess.DEVNULL)


class TraceInstance:
    """A tracefs instance with one event enabled under a filter: the
    kernel's own record of the event's firings (its trace ring buffer), a
    witness independent of BPF. `count()` is the number of records so far;
    the instance is removed on exit."""

    def __init__(self, event, filt=""):
        mount_tracefs()
        self.dir = "/sys/kernel/tracing/instances/bpfscope_%s_%d" % (event.replace("/", "_"), os.getpid())
        self.event, self.filt = event, filt

    def __enter__(self):
        os.mkdir(self.dir)
        ev = os.path.join(self.dir, "events", self.event)
        try:
            if self.filt:
                with open(os.path.join(ev, "filter"), "w") as f:
                    f.write(self.filt)
            with open(os.path.join(ev, "enable"), "w") as f:
                f.write("1")
        except Exception:
            self.__exit__()
            raise
        return self

    def count(self, but_pid=None):
        """Records so far; with but_pid, less those whose current task was
        that process (an event in an interrupt shows the task it interrupted)."""
        name = self.event.split("/")[-1] + ":"
        n = 0
        with open(os.path.join(self.dir, "trace")) as f:
            for line in f:
                if name not in line:
                    continue
                m = re.match(r"^\s*.*-(\d+)\s+\[", line)
                if but_pid is not None and m and int(m.group(1)) == but_pid:
                    continue
                n += 1
        return n

    def lost(self):
        """Records the instance's ring buffer dropped (overrun), all CPUs."""
        n = 0
        for cpu in os.listdir(os.path.join(self.dir, "per_cpu")):
            with open(os.path.join(self.dir, "per_cpu", cpu, "stats")) as f:
                for line in f:
                    if line.startswith(("overrun:", "dropped events:")):
                        n += int(line.split(":")[1])
        return n

    def __exit__(self, *exc):
        try:
            with open(os.path.join(self.dir, "events", self.event, "enable"), "w") as f:
                f.write("0")
        except OSError:
            pass
        os.rmdir(self.dir)


class Run:
    """A finished run: its stdout lines (the attach marker removed), stderr
    and exit status."""

    def __init__(self, lines, stderr, rc):
        self.lines, self.stderr, self.rc = lines, stderr, rc

    def json(self, kind="event"):
        out = []
        for line in self.lines:
            msg = json.loads(line)
            if kind is None or msg.get("type") == kind:
                out.append(msg)
        return out

    def missed(self):
        """Events the run says it missed: probe firings the kernel skipped
        (a BPF program already running on that CPU) and ring buffer losses;
        warnings on stderr, or with -f json its "missed" and "lost_events"
        messages on stdout (a script's run says it in both: counted once)."""
        n = 0
        for line in self.stderr.splitlines():
            m = re.match(r"^WARNING: .+: (\d+) firings? (was|were) missed", line) or \
                re.match(r"^WARNING: Total lost event count: (\d+)", line)
            if m:
                n += int(m.group(1))
        reported = [json.loads(l) for l in self.lines
                    if l.startswith('{"type": "missed"') or l.startswith('{"type": "lost_events"')]
        if reported:
            n = sum(m["data"]["firings"] if m["type"] == "missed" else m["data"]["events"] for m in reported)
        return n

    def __repr__(self):
        return "rc=%s\nstdout:\n%s\nstderr:\n%s" % (self.rc, "\n".join(self.lines), self.stderr)


class Process:
    """A tracer process whose stdout is read line by line in a thread."""

    def __init__(self, argv, ready, env=None):
        self.lines = []
        self.cond = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env, start_new_session=True)
        self.ready = ready
        self.err = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()

    def _read(self, stream, sink):
        for line in stream:
            with self.cond:
                sink.append(line.rstrip("\n"))
                self.cond.notify_all()
        stream.close()
        with self.cond:
            sink.append(None)
            self.cond.notify_all()

    def wait_for(self, pred, timeout=10):
        end = time.time() + timeout
        with self.cond:
            while not pred(self.lines):
                left = end - time.time()
                if left <= 0 or (self.lines and self.lines[-1] is None):
                    return False
                self.cond.wait(left)
            return True

    def wait_ready(self, timeout=15):
        if not self.wait_for(self.ready, timeout):
            self.stop()
            raise AssertionError("not ready: %r" % self.finish())

    def stop(self, sig=signal.SIGINT):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def finish(self, timeout=15):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.wait_for(lambda ls: ls and ls[-1] is None, 5)
        lines = [l for l in self.lines if l is not None and l != MARKER]
        return Run(lines, "\n".join(l for l in self.err if l is not None), self.proc.returncode)


def start_tool(args, env=None):
    """Starts `bpfscope ARGS`; returns once its probes are attached."""
    e = dict(os.environ, **(env or {}))
    e[MARKER] = "1"
    p = Process([BPFSCOPE] + list(args), lambda ls: MARKER in ls, e)
    p.wait_ready()
    return p


def run_tool(args, traffic=None, settle=0.3, env=None):
    """Runs a tool around `traffic()`, then stops it with SIGINT."""
    p = start_tool(args, env)
    try:
        if traffic:
            traffic()
        time.sleep(settle)
    finally:
        p.stop()
    return p.finish()


def start_twin(argv, header):
    """Starts a libbpf-tools twin (line-buffered); ready when a stdout line
    starts with `header` (they print it once attached)."""
    p = Process(["stdbuf", "-oL"] + list(argv), lambda ls: any(l and l.startswith(header) for l in ls))
    p.wait_ready()
    return p


class Cgroup:
    """A cgroup v2 directory the test makes, with a `child` directory below
    it, removed at exit (once the processes moved into them have ended)."""

    def __init__(self, tag):
        root = next(l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "cgroup2")
        self.path = os.path.join(root, "bpfscope_%s_%d" % (tag, os.getpid()))
        self.child = os.path.join(self.path, "child")

    def __enter__(self):
        os.makedirs(self.child)
        return self

    def __exit__(self, *exc):
        for d in (self.child, self.path):
            for _ in range(50):  # a process that just ended may still count
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)

    def move(self, pid, child=True):
        """Moves process `pid` into the child (or the directory itself)."""
        with open(os.path.join(self.child if child else self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def argv(self, argv, child=True):
        """`argv` run inside the child (or the directory itself)."""
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.child if child else self.path] + list(argv)


class NetnsPair:
    """Two network namespaces joined by a veth pair: A at 10.200.X.1 / fdc8:X::1,
    B at .2 / ::2 (X from the pid). Deleted on exit, also on failure. The
    veths are bsv0 (in A) and bsv1 (in B), or with `unique` names made from
    the tag and the pid (for tools that report per device, system-wide)."""

    def __init__(self, tag, unique=False):
        n = os.getpid() % 200 + 20
        self.a, self.b = "bsA_%s_%d" % (tag, os.getpid()), "bsB_%s_%d" % (tag, os.getpid())
        if unique:
            base = "%s%d" % (tag[:4], os.getpid() % 1000000)
            self.dev = {"a": base + "a", "b": base + "b"}
        else:
            self.dev = {"a": "bsv0", "b": "bsv1"}
        self.addr4 = {"a": "10.200.%d.1" % n, "b": "10.200.%d.2" % n}
        self.addr6 = {"a": "fdc8:%d::1" % n, "b": "fdc8:%d::2" % n}

    def __enter__(self):
        try:
            ip = lambda *a: subprocess.run(["ip"] + list(a), check=True)
            ip("netns", "add", self.a)
            ip("netns", "add", self.b)
            ip("link", "add", self.dev["a"], "netns", self.a, "type", "veth", "peer", "name", self.dev["b"], "netns",
               self.b)
            for ns, dev, k in ((self.a, self.dev["a"], "a"), (self.b, self.dev["b"], "b")):
                ip("-n", ns, "addr", "add", self.addr4[k] + "/24", "dev", dev)
                ip("-n", ns, "addr", "add", self.addr6[k] + "/64", "dev", dev, "nodad")
                ip("-n", ns, "link", "set", dev, "up")
                ip("-n", ns, "link", "set", "lo", "up")
            self.wait_running()
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def wait_running(self, timeout=10):
        """Until both veths are up with their queueing discipline attached.
        A device set up gets it from the kernel's link watch work, later and
        later on a loaded machine; until then the noop qdisc drops whatever
        is sent (a CI run once lost all of a test's datagrams so)."""
        deadline = time.time() + timeout
        for ns, dev in ((self.a, self.dev["a"]), (self.b, self.dev["b"])):
            while True:
                link = subprocess.run(["ip", "-n", ns, "-o", "link", "show", "dev", dev], capture_output=True,
                                      text=True).stdout
                qdisc = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "show", "dev", dev],
                                       capture_output=True, text=True).stdout
                if " state UP " in link and qdisc and "qdisc noop" not in qdisc:
                    break
                if time.time() > deadline:
                    raise AssertionError("%s in %s not running: %s%s" % (dev, ns, link, qdisc))
                time.sleep(0.02)

    def __exit__(self, *exc):
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)

    def mine(self, lines):
        """The lines that name one of the pair's addresses: tools trace the
        whole machine, and other traffic may run beside a test."""
        addrs = list(self.addr4.values()) + list(self.addr6.values())
        return [l for l in lines if any(re.search(r"(^|[\s\"])%s([\s:\"]|$)" % re.escape(a), l) for a in addrs)]

    def wait_settled(self, port, timeout=120):
        """Until no TCP socket on `port` in either namespace can still send:
        every one is gone or in TIME-WAIT. After that the kernel makes no
        more retransmits of the sessions, so a count read then is final."""
        deadline = time.time() + timeout
        while True:
            busy = []
            for side in ("a", "b"):
                out = self.run(side, ["ss", "-Htan", "( sport = :%d or dport = :%d )" % (port, port)],
                               capture_output=True, text=True).stdout
                busy += [l for l in out.splitlines() if l.strip() and not l.startswith("TIME-WAIT")]
            if not busy:
                return
            if time.time() > deadline:
                raise AssertionError("sockets on port %d still open: %s" % (port, busy))
            time.sleep(0.05)

    def ns(self, side):
        return self.a if side == "a" else self.b

    def run(self, side, argv, **kw):
        return subprocess.run(["ip", "netns", "exec", self.ns(side)] + list(argv), **kw)

    def popen(self, side, argv, **kw):
        return subprocess.Popen(["ip", "netns", "exec", self.ns(side)] + list(argv), **kw)


class LossyPair(NetnsPair):
    """A namespace pair whose side a drops a share of the TCP segments sent to
    `port` (nftables, input hook; `match` adds to the rule, e.g. "tcp flags !
    syn"), and whose side b sends one segment per skb (gso_max_segs 1), so
    that retransmits are segments. `dropped()` reads the rule's counter."""

    def __init__(self, tag, port, percent=5, match=""):
        super().__init__(tag)
        self.port, self.percent, self.match = port, percent, match

    def __enter__(self):
        super().__enter__()
        try:
            self.run("b", ["ip", "link", "set", "dev", "bsv1", "gso_max_segs", "1"], check=True)
            rule = "tcp dport %d %s numgen random mod 100 < %d counter drop" % (self.port, self.match, self.percent)
            for cmd in ("add table inet bpfscope",
                        "add chain inet bpfscope in { type filter hook input priority 0; }",
                        "add rule inet bpfscope in " + rule):
                self.run("a", ["nft"] + cmd.split(), check=True)
        except Exception:
            super().__exit__(None, None, None)
            raise
        return self

    def dropped(self):
        out = self.run("a", ["nft", "list", "chain", "inet", "bpfscope", "in"], capture_output=True, text=True,
                       check=True).stdout
        return int(re.search(r"counter packets (\d+)", out).group(1))


def python_in(pair, side, code, *args, **kw):
    """Runs Python `code` in a namespace of `pair` (with sys.argv[1:] = args)."""
    return pair.popen(side, [sys.executable, "-c", code] + [str(a) for a in args], **kw)


TCP_SERVER = r"""
import socket, sys
host, port, reply = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((host, port)); s.listen(8)
print("ready", flush=True)
c, _ = s.accept()
got = 0
while True:
    b = c.recv(65536)
    if not b: break
    got += len(b)
if reply: c.sendall(b"y" * reply)
c.close(); s.close()
print(got, flush=True)
"""

TCP_CLIENT = r"""
import socket, sys
host, port, n, lport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
c = socket.socket(fam, socket.SOCK_STREAM)
if lport: c.bind(("", lport))
c.connect((host, port))
me = c.getsockname()[1]
c.sendall(b"x" * n)
c.shutdown(socket.SHUT_WR)
got = 0
while True:
    b = c.recv(65536)
    if not b: break
    got += len(b)
c.close()
print(me, got, flush=True)
"""


class TcpServer:
    """A one-connection TCP server in a namespace of `pair`, listening once
    constructed: it reads until the client shuts down, answers `reply` bytes
    and closes. `pid` is known before any traffic (for -p tests)."""

    def __init__(self, pair, side, host, port, reply=0):
        self.pair, self.side, self.host, self.port = pair, side, host, port
        self.proc = python_in(pair, side, TCP_SERVER, host, port, reply, stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.reply = reply
        assert self.proc.stdout.readline().strip() == "ready"

    def connect(self, send, lport=0):
        """The client, on the other side: sends `send` bytes. Returns (client
        pid, client port) once both ends are done."""
        other = "b" if self.side == "a" else "a"
        cli = python_in(self.pair, other, TCP_CLIENT, self.host, self.port, send, lport,
                        stdout=subprocess.PIPE, text=True)
        out, _ = cli.communicate(timeout=20)
        srv_out, _ = self.proc.communicate(timeout=20)
        assert int(srv_out.strip()) == send, srv_out
        me, got = out.split()
        assert int(got) == self.reply, out
        return cli.pid, int(me)


def tcp_session(pair, server_side, host, port, send, reply=0, lport=0):
    """One TCP session: the client (the other side) sends `send` bytes, shuts
    down its write side, the server answers `reply` bytes and closes.
    Returns (client pid, client port, server pid)."""
    srv = TcpServer(pair, server_side, host, port, reply)
    cpid, cport = srv.connect(send, lport)
    return cpid, cport, srv.pid
