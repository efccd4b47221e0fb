"""skblife on UDP datagrams that wait in a receiver's socket: a receiver in
one network namespace closes its socket unread after a pause, so each
sk_buff lives at least that long (sent, crossed the veth, queued, freed by
the close). Datagrams read by the receiver would not do: on 6.18 a socket's
reader frees them into the per-CPU NAPI cache, which no event shows."""
import subprocess
import unittest

from histrun import json_hists, text_hists, total, udp_send
from toolrun import NetnsPair, mount_tracefs, python_in, run_tool

N, PAUSE = 20, 0.6

# Binds, says ready, waits for the line the test writes once every datagram
# is sent, then until all N are in its queue (peeked, with a peek offset so
# that each peek reads the next: none is taken off the queue), then PAUSE
# seconds (so each lives at least that long however slow the sender and the
# veth were), and closes the socket unread. "done K": K datagrams were queued.
SLOW_SINK = r"""
import socket, sys, time
SO_PEEK_OFF = 42
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.setsockopt(socket.SOL_SOCKET, SO_PEEK_OFF, 0)
print("ready", flush=True)
sys.stdin.readline()
s.settimeout(20)
got = 0
try:
    for _ in range(int(sys.argv[4])):
        s.recv(65536, socket.MSG_PEEK)
        got += 1
except socket.timeout:
    pass
time.sleep(float(sys.argv[3]))
s.close()
print("done", got, flush=True)
"""


class SkblifeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, pair):
        sink = python_in(pair, "b", SLOW_SINK, pair.addr4["b"], 7301, PAUSE, N, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(sink.stdout.readline().strip(), "ready")
            udp_send(pair, "a", pair.addr4["b"], 7301, 200, N)
            sink.stdin.write("sent\n")
            sink.stdin.flush()
            self.assertEqual(sink.stdout.readline().strip(), "done %d" % N)
        finally:
            sink.kill()
            sink.wait()
            sink.stdin.close()
            sink.stdout.close()

    def test_lifespans(self):
        with NetnsPair("skbl") as pair:
            run = run_tool(["skblife"], lambda: self.traffic(pair), settle=1.0)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing sk_buff lifespans. Hit Ctrl-C to end.")
        h = text_hists(run.lines)
        self.assertEqual(list(h), [("nsecs", "")], run)
        # Our datagrams lived PAUSE (a little less for the last sent) and
        # well under 2 s; few other sk_buffs live that long.
        self.assertGreaterEqual(total(h["nsecs", ""], 1 << 28, 1 << 31), N, run)

    def test_usecs_json(self):
        with NetnsPair("skblj") as pair:
            run = run_tool(["-f", "json", "skblife", "-u"], lambda: self.traffic(pair), settle=1.0)
        self.assertEqual(run.rc, 0, run)
        h = json_hists(run)
        self.assertEqual(list(h), [("@usecs", "")], run)
        self.assertGreaterEqual(total(h["@usecs", ""], 1 << 18, 1 << 21), N, run)


if __name__ == "__main__":
    unittest.main()
