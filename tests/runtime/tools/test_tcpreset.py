"""tcpreset on resets the test causes: connects to a closed port (the kernel
answers with RST, no socket) and a close with SO_LINGER 0 (RST from a
socket); the count of sent resets equals the namespace's TcpOutRsts."""
import re
import subprocess
import unittest

from toolrun import NetnsPair, mount_tracefs, python_in, run_tool

# 3 connects to a closed port, then one connection closed with SO_LINGER 0.
RESETS = r"""
import socket, struct, sys
host = sys.argv[1]
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
for _ in range(3):
    c = socket.socket(fam, socket.SOCK_STREAM); c.connect_ex((host, 5702)); c.close()
s = socket.socket(fam, socket.SOCK_STREAM); s.bind((host, 5701)); s.listen(1)
c = socket.socket(fam, socket.SOCK_STREAM); c.connect((host, 5701))
a, _ = s.accept()
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); c.close()
a.recv(1); a.close(); s.close()
"""


def out_rsts(pair):
    out = pair.run("a", ["nstat", "-saz", "TcpOutRsts"], capture_output=True, text=True).stdout
    return int(re.search(r"TcpOutRsts\s+(\d+)", out).group(1))


class TcpresetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_sent_and_received(self):
        with NetnsPair("rst") as pair:
            host = pair.addr4["a"]
            run = run_tool(["tcpreset", "-r"], lambda: python_in(pair, "a", RESETS, host).wait(timeout=20))
            sent = out_rsts(pair)
        self.assertEqual(run.rc, 0, run)
        rows = [l.split() for l in run.lines[1:] if host in l]
        sent_rows = [r for r in rows if r[4] == "S>"]
        self.assertEqual(len(sent_rows), sent, run)
        refused = [r for r in sent_rows if r[3] == "%s:5702" % host]
        self.assertEqual(len(refused), 3, run)
        for r in refused:
            self.assertEqual(r[6:], ["-", "SK_RST_REASON_NO_SOCKET"])
        linger = [r for r in sent_rows if r[5] == "%s:5701" % host]
        self.assertEqual(len(linger), 1, run)
        self.assertTrue(linger[0][3].startswith(host + ":") and not linger[0][3].endswith(":0"), linger)
        self.assertEqual(linger[0][6], "CLOSE")  # SO_LINGER 0: closed, then the reset
        received = [r for r in rows if r[4] == "R<"]
        self.assertEqual(len(received), 4, run)  # 3 refused connects and the accepted socket

    def test_ipv6_json(self):
        with NetnsPair("rst6") as pair:
            host = pair.addr6["a"]
            run = run_tool(["tcpreset", "-6", "-f", "json"], lambda: python_in(pair, "a", RESETS, host).wait(timeout=20))
        events = [m["data"] for m in run.json("event") if m["data"]["laddr"] == host]
        self.assertEqual(len(events), 4, run)
        self.assertEqual(sorted(e["lport"] for e in events if e["state"] == "-"), [5702] * 3, run)
        self.assertEqual([e["rport"] for e in events if e["state"] != "-"], [5701], run)


if __name__ == "__main__":
    unittest.main()
