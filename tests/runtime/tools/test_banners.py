"""Every tool that prints only at exit or at intervals says at start what it
traces and how to end it, as bcc's tools do ("Tracing block device I/O...
Hit Ctrl-C to end."): each is started on the real kernel, in the mode that
prints nothing else at start (tcpconnect -c, tcpretrans -c...), and its banner
must be its first line of output before any Ctrl-C. With -f json the banner
is a printf message, as bpftrace prints a printf, ahead of the tool's
events and maps."""
import json
import signal
import subprocess
import unittest

from toolrun import BPFSCOPE, Process, mount_tracefs

COUNT_SYSCALL = "t:syscalls:sys_enter_getppid"

# (command line, banner): the libbpf-tools twin's banner where it has one,
# else bcc's, else the book's; none of these print anything else at start.
BANNERS = [
    (["argdist", "-C", COUNT_SYSCALL + "()"], "Tracing... Output every 1 secs. Hit Ctrl-C to end"),
    (["argdist", "-i", "5", "-C", COUNT_SYSCALL + "()"], "Tracing... Output every 5 secs. Hit Ctrl-C to end"),
    (["biolatency"], "Tracing block device I/O... Hit Ctrl-C to end."),
    (["biolatency", "5", "2"], "Tracing block device I/O... Hit Ctrl-C to end."),
    (["biostacks"], "Tracing block I/O with init stacks. Hit Ctrl-C to end."),
    (["biotop"], "Tracing... Output every 1 secs. Hit Ctrl-C to end"),
    (["biotop", "-C", "3"], "Tracing... Output every 3 secs. Hit Ctrl-C to end"),
    (["bitesize"], "Tracing block device I/O... Hit Ctrl-C to end."),
    (["cpudist"], "Tracing on-CPU time... Hit Ctrl-C to end."),
    (["cpudist", "-O"], "Tracing off-CPU time... Hit Ctrl-C to end."),
    (["funccount", COUNT_SYSCALL], 'Tracing "%s"... Hit Ctrl-C to end.' % COUNT_SYSCALL),
    (["ieee80211scan"], "Tracing ieee80211 SSID scans. Hit Ctrl-C to end."),
    (["iosched"], "Tracing block I/O schedulers. Hit Ctrl-C to end."),
    (["ipecn", "-c"], "Tracing inbound IP ECN Congestion Experienced. Hit Ctrl-C to end."),
    (["netsize"], "Tracing net device send/receive. Hit Ctrl-C to end."),
    (["nettxlat"], "Tracing net device xmit queue latency. Hit Ctrl-C to end."),
    (["nvmelatency"], "Tracing NVMe command latency. Hit Ctrl-C to end."),
    (["offcputime"], "Tracing off-CPU time (us) of all threads by user + kernel stack... Hit Ctrl-C to end."),
    (["offwaketime"], "Tracing blocked time (us) by off-CPU and waker stack... Hit Ctrl-C to end."),
    (["profile"], "Sampling at 49 Hertz of all threads by user + kernel... Hit Ctrl-C to end."),
    (["qdisclat"], "Tracing qdisc queueing latency. Hit Ctrl-C to end."),
    (["runqlat"], "Tracing run queue latency... Hit Ctrl-C to end."),
    (["runqlen"], "Sampling run queue length... Hit Ctrl-C to end."),
    (["scsilatency"], "Tracing SCSI command latency. Hit Ctrl-C to end."),
    (["scsiresult"], "Tracing SCSI command results. Hit Ctrl-C to end."),
    (["seeksize"], "Tracing block I/O requested seeks... Hit Ctrl-C to end."),
    (["skbdrop", "-r"], "Tracing skb drops by reason and stack. Hit Ctrl-C to end."),
    (["skblife"], "Tracing sk_buff lifespans. Hit Ctrl-C to end."),
    (["so1stbyte"], "Tracing IP socket first-read-byte latency. Ctrl-C to end."),
    (["socketio"], "Tracing socket I/O... Hit Ctrl-C to end."),
    (["socksize"], "Tracing socket I/O size. Ctrl-C to end."),
    (["sockstat"], "Tracing sock statistics. Output every 1 second(s)."),
    (["soconnlat"], "Tracing IP connect() latency with ustacks. Ctrl-C to end."),
    (["sofamily"], "Tracing socket connect/accepts. Ctrl-C to end."),
    (["soprotocol"], "Tracing socket connect/accepts. Ctrl-C to end."),
    (["sormem"], "Tracing socket receive buffer size. Hit Ctrl-C to end."),
    (["stackcount", COUNT_SYSCALL], 'Tracing "%s"... Hit Ctrl-C to end.' % COUNT_SYSCALL),
    (["superping"], "Tracing ICMP ping latency. Hit Ctrl-C to end."),
    (["syscount"], "Tracing syscalls, printing top 10... Ctrl+C to quit."),
    (["tcpconnect", "-c"], "Tracing connect ... Hit Ctrl-C to end"),
    (["tcpnagle"], "Tracing TCP send-side holding... Hit Ctrl-C to end."),
    (["tcpretrans", "-c"], "Tracing retransmits ... Hit Ctrl-C to end"),
    (["tcprtt"], "Tracing TCP RTT... Hit Ctrl-C to end."),
    (["tcpsynbl"], "Tracing SYN backlog size. Ctrl-C to end."),
    (["tcptop"], "Tracing... Output every 1 secs. Hit Ctrl-C to end"),
    (["tcptop", "-C", "2"], "Tracing... Output every 2 secs. Hit Ctrl-C to end"),
    (["wakeuptime"], "Tracing blocked time (us) by kernel stack... Hit Ctrl-C to end."),
]

# Generous: a tool compiles its script first, on a machine shared with
# other tests.
BANNER_WAIT = 60


def unavailable():
    """{tool: why} of the tools `bpfscope tools` says cannot run here (no
    nvme, SCSI or wireless driver loaded...)."""
    out = subprocess.run([BPFSCOPE, "tools"], capture_output=True, text=True, timeout=300).stdout
    why = {}
    for line in out.splitlines()[1:]:
        name = line.split()[0]
        if "unavailable:" in line:
            why[name] = line[line.index("unavailable:"):]
    return why


class Banners(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()
        cls.unavailable = unavailable()

    def started(self, args, banner):
        """Runs `bpfscope ARGS` until its stdout holds `banner`, then sends
        SIGINT; returns the finished run and whether the banner came first."""
        p = Process([BPFSCOPE] + args, lambda ls: any(l is not None and l.strip() for l in ls))
        seen = p.wait_for(lambda ls: banner in ls or (ls and ls[-1] is None), BANNER_WAIT)
        p.stop(signal.SIGINT)
        run = p.finish()
        return run, seen and banner in run.lines

    def test_banner_before_ctrl_c(self):
        for args, banner in BANNERS:
            with self.subTest(args=" ".join(args)):
                if args[0] in self.unavailable:
                    self.skipTest("%s: %s" % (args[0], self.unavailable[args[0]]))
                run, seen = self.started(args, banner)
                self.assertTrue(seen, run)
                # Nothing before it: it is what the user sees first.
                self.assertEqual(run.lines[0], banner, run)
                self.assertEqual(run.rc, 0, run)

    def test_json_banner_is_a_printf_message(self):
        # As bpftrace prints a printf in JSON: the banner is the first
        # message, then the tool's own (tcpconnect -c's table at the end).
        for args, banner in [(["tcpconnect", "-c"], "Tracing connect ... Hit Ctrl-C to end"),
                             (["tcpretrans", "-c"], "Tracing retransmits ... Hit Ctrl-C to end"),
                             (["socketio"], "Tracing socket I/O... Hit Ctrl-C to end."),
                             (["tcptop", "-C"], "Tracing... Output every 1 secs. Hit Ctrl-C to end"),
                             (["biolatency"], "Tracing block device I/O... Hit Ctrl-C to end.")]:
            with self.subTest(args=" ".join(args)):
                msg = json.dumps({"type": "printf", "data": banner + "\n"})
                run, seen = self.started(["-f", "json"] + args, msg)
                self.assertTrue(seen, run)
                self.assertEqual(json.loads(run.lines[0]), {"type": "printf", "data": banner + "\n"}, run)
                self.assertEqual(run.rc, 0, run)
                for line in run.lines:
                    json.loads(line)  # every line is a message


if __name__ == "__main__":
    unittest.main()
