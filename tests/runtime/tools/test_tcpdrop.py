"""tcpdrop on packets that nftables drops: every drop of an established
connection's segment shows, with the reason NETFILTER_DROP, the packet's
addresses and ports and a kernel stack; the count equals nft's counter."""
import re
import subprocess
import unittest

from toolrun import BPFSCOPE, LossyPair, mount_tracefs, run_tool, tcp_session

EVENT = re.compile(r"^\d\d:\d\d:\d\d ")


def events(run):
    """(columns, stack lines) of each event."""
    out = []
    for line in run.lines[1:]:
        if EVENT.match(line):
            out.append((line.split(), []))
        elif out and line.strip():
            out[-1][1].append(line.strip())
    return out


class TcpdropTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def test_netfilter_drops(self):
        # Only data segments are dropped: they all arrive during the session,
        # so none is dropped after the tool has stopped (a FIN or ACK
        # retransmitted late could be).
        with LossyPair("drop", 5401, percent=10, match="meta length > 200") as pair:
            run = run_tool(["tcpdrop", "-4"], lambda: tcp_session(pair, "a", pair.addr4["a"], 5401, 500000),
                           settle=0.5)
            dropped = pair.dropped()
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0].split()[:7], ["TIME", "PID", "IP", "SADDR:SPORT", ">", "DADDR:DPORT", "STATE"])
        # Retransmitted segments the receiver already has are drops too
        # (TCP_OLD_DATA): count the netfilter ones.
        mine = [(c, s) for c, s in events(run)
                if c[5] == "%s:5401" % pair.addr4["a"] and c[-1] == "SKB_DROP_REASON_NETFILTER_DROP"]
        self.assertGreater(dropped, 0)
        self.assertEqual(len(mine) + run.missed(), dropped, run)
        for cols, stack in mine:
            self.assertEqual(cols[2], "4")
            self.assertTrue(cols[3].startswith(pair.addr4["b"] + ":"), cols)
            self.assertEqual(cols[-1], "SKB_DROP_REASON_NETFILTER_DROP")
            self.assertRegex(cols[-2], r"^\((FIN|SYN|RST|PSH|ACK|URG|ECE|CWR)(\|(FIN|SYN|RST|PSH|ACK|URG|ECE|CWR))*\)$")
            self.assertIn("ACK", cols[-2])
            # A stack the stack map could not store (a bucket collision,
            # get_stackid's -EEXIST) prints empty: rare, allowed below.
            self.assertTrue(not stack or any(f.startswith("nf_hook_slow") for f in stack), stack)
        self.assertLessEqual(sum(1 for c, s in mine if not s), max(1, len(mine) // 10), run)

    def test_ipv6_json(self):
        with LossyPair("drop6", 5402, percent=10, match="meta length > 200") as pair:
            run = run_tool(["tcpdrop", "-f", "json"], lambda: tcp_session(pair, "a", pair.addr6["a"], 5402, 300000),
                           settle=0.5)
            dropped = pair.dropped()
        netfilter = int(subprocess.run(
            [BPFSCOPE, "-q", "-e", 'BEGIN { printf("%d\\n", SKB_DROP_REASON_NETFILTER_DROP); exit(); }'],
            capture_output=True, text=True, check=True).stdout)
        evs = [m["data"] for m in run.json("event") if m["data"]["dport"] == 5402 and m["data"]["reason"] == netfilter]
        # Every drop is an event, or a firing the run reports as missed.
        self.assertEqual(len(evs) + run.missed(), dropped, run)
        for e in evs:
            self.assertEqual(e["ip"], 6)
            self.assertEqual(e["daddr"], pair.addr6["a"])
            self.assertTrue(e["flags"] & 0x10, e)  # ACK
            self.assertTrue(not e["kstack"].strip() or "nf_hook_slow" in e["kstack"], e)
        self.assertLessEqual(sum(1 for e in evs if not e["kstack"].strip()), max(1, len(evs) // 10), run)


if __name__ == "__main__":
    unittest.main()
