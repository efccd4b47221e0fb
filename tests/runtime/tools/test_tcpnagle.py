"""tcpnagle on a process of its own command name that corks a TCP socket for
HOLD_MS, then sends with Nagle on and with TCP_NODELAY: the sends are counted
by setting, and the corked data's wait is the one blocked time."""
import os
import unittest

from histrun import json_hists, text_hists, total
from socktraffic import Actor, maps
from toolrun import NetnsPair, mount_tracefs, run_tool

HOLD_MS = 200
# Two sends under TCP_CORK, held HOLD_MS, then uncorked; three sends with
# Nagle on, 50 ms apart (each leaves at once: nothing is in flight by then);
# four with TCP_NODELAY. The receiver reads everything.
TRAFFIC = r"""
hold = int(ARGS[0]) / 1000
l = socket.socket(); l.bind(("127.0.0.1", 7201)); l.listen(1)
c = socket.create_connection(("127.0.0.1", 7201)); a, _ = l.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
c.send(b"x" * 100); c.send(b"y" * 100)
time.sleep(hold)
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
assert len(a.recv(200, socket.MSG_WAITALL)) == 200
for _ in range(3):
    time.sleep(0.05)
    c.send(b"n" * 10)
    assert len(a.recv(10, socket.MSG_WAITALL)) == 10
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for _ in range(4):
    c.send(b"d" * 10)
assert len(a.recv(40, socket.MSG_WAITALL)) == 40
c.close(); a.close(); l.close()
"""


class TcpnagleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, args):
        with NetnsPair("tngl") as pair:
            actor = Actor(pair, "a", "bstn%d" % (os.getpid() % 100000), TRAFFIC, HOLD_MS)
            try:
                run = run_tool(["tcpnagle", "-p", str(actor.pid)] + args, lambda: actor.go())
            finally:
                actor.kill()
        self.assertEqual(run.rc, 0, run)
        return run

    def test_json(self):
        run = self.traffic(["-f", "json"])
        m = maps(run)
        self.assertEqual(m["@nagle"], {"CORK": 2, "ON": 3, "OFF": 4}, run)
        self.assertEqual(m["@blocked"], 1, run)
        h = json_hists(run)[("@blocked_us", "")]
        # The wait is the hold, give or take scheduling: in [HOLD_MS, 2 HOLD_MS) ms.
        self.assertEqual(total(h), 1, run)
        self.assertEqual(total(h, 131072, 262144), 1, run)

    def test_text(self):
        run = self.traffic([])
        self.assertEqual(run.lines[0], "Tracing TCP send-side holding... Hit Ctrl-C to end.", run)
        self.assertIn("@nagle[CORK]: 2", run.lines, run)
        self.assertIn("@nagle[OFF]: 4", run.lines, run)
        h = text_hists(run.lines)
        self.assertEqual(total(h[("blocked_us", "")], 131072, 262144), 1, run)


if __name__ == "__main__":
    unittest.main()
