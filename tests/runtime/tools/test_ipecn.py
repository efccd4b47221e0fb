"""ipecn on pings between two network namespaces sent with the ECN field set
to CE (ping -Q 3; the echo replies carry it back) and to ECT(0) (-Q 2, not
counted): the tool's counts equal the kernel's IpExtInCEPkts / Ip6InCEPkts.
Where clang exists, also on an ECN TCP stream whose segments a tc-BPF
program marks CE on the sender's egress, as a congested router would."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from toolrun import NetnsPair, mount_tracefs, run_tool, tcp_session

# ORs CE into the ECN field of ECT IPv4 TCP packets (KERNEL.md §7).
CE_MARK = r"""
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <stddef.h>

SEC("tc")
int ce_mark(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->protocol != IPPROTO_TCP)
		return TC_ACT_OK;
	__u8 tos = ip->tos, ntos = tos | 3;
	if ((tos & 3) == 0 || (tos & 3) == 3)
		return TC_ACT_OK;
	bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), bpf_htons(tos), bpf_htons(ntos), 2);
	bpf_skb_store_bytes(skb, ETH_HLEN + offsetof(struct iphdr, tos), &ntos, 1, 0);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
"""

CE4, CE6, ECT = 5, 3, 4


def nstat(pair, side, name):
    out = pair.run(side, ["nstat", "-saz", name], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^%s\s+(\d+)" % name, out, re.M)
    return int(m.group(1)) if m else 0


def ping(pair, dst, tos, n, six=False):
    argv = ["ping", "-q", "-c", str(n), "-i", "0.01", "-Q", str(tos), dst] + (["-6"] if six else [])
    pair.run("a", argv, check=True, stdout=subprocess.DEVNULL, timeout=20)


class IpecnTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        mount_tracefs()

    def traffic(self, pair):
        ping(pair, pair.addr4["b"], 3, CE4)
        ping(pair, pair.addr4["b"], 2, ECT)
        ping(pair, pair.addr6["b"], 3, CE6, six=True)
        ping(pair, pair.addr6["b"], 2, ECT, six=True)

    def counters(self, pair):
        return {(side, name): nstat(pair, side, name) for side in "ab" for name in ("IpExtInCEPkts", "Ip6InCEPkts")}

    def test_events(self):
        with NetnsPair("ecn") as pair:
            before = self.counters(pair)
            run = run_tool(["ipecn"], lambda: self.traffic(pair))
            after = self.counters(pair)
        self.assertEqual(run.rc, 0, run)
        self.assertEqual(run.lines[0], "Tracing inbound IP ECN Congestion Experienced. Hit Ctrl-C to end.")
        ours = {}
        for line in run.lines[1:]:
            m = re.match(r"^\d\d:\d\d:\d\d ECN CE from: (\S+)$", line)
            self.assertTrue(m, line)
            ours[m.group(1)] = ours.get(m.group(1), 0) + 1
        # Requests reach b from a, replies reach a from b; every one is CE.
        for side, other in (("b", "a"), ("a", "b")):
            self.assertEqual(after[side, "IpExtInCEPkts"] - before[side, "IpExtInCEPkts"], CE4)
            self.assertEqual(after[side, "Ip6InCEPkts"] - before[side, "Ip6InCEPkts"], CE6)
            self.assertEqual(ours.get(pair.addr4[other]), CE4, run)
            self.assertEqual(ours.get(pair.addr6[other]), CE6, run)

    def test_count_and_family_filters(self):
        for args, v4, v6 in ((["-c"], CE4, CE6), (["-c", "-4"], CE4, None), (["-c", "-6"], None, CE6)):
            with self.subTest(args=args), NetnsPair("ecnc") as pair:
                run = run_tool(["ipecn"] + args, lambda: self.traffic(pair))
                self.assertEqual(run.rc, 0, run)
                self.assertEqual(run.lines[1].split(), ["SADDR", "DADDR", "COUNT"])
                rows = {(r[0], r[1]): int(r[2]) for r in (l.split() for l in run.lines[2:])}
                for fam, want in ((pair.addr4, v4), (pair.addr6, v6)):
                    self.assertEqual(rows.get((fam["a"], fam["b"])), want, run)
                    self.assertEqual(rows.get((fam["b"], fam["a"])), want, run)

    def test_json(self):
        with NetnsPair("ecnj") as pair:
            run = run_tool(["ipecn", "-f", "json"], lambda: self.traffic(pair))
        self.assertEqual(run.rc, 0, run)
        events = [m["data"] for m in run.json("event")]
        for e in events:
            self.assertEqual(sorted(e), ["saddr", "time"])
            self.assertRegex(e["time"], r"^\d\d:\d\d:\d\d$")
        ours = [e["saddr"] for e in events if e["saddr"] in (pair.addr4["a"], pair.addr4["b"],
                                                             pair.addr6["a"], pair.addr6["b"])]
        self.assertEqual(sorted(ours), sorted([pair.addr4["a"], pair.addr4["b"]] * CE4 +
                                              [pair.addr6["a"], pair.addr6["b"]] * CE6))


    def test_tcp_marked_by_tc_bpf(self):
        clang = shutil.which("clang")
        if not clang:
            self.skipTest("clang not installed: no tc-BPF CE marker")
        with tempfile.TemporaryDirectory() as tmp:
            src, obj = os.path.join(tmp, "ce.c"), os.path.join(tmp, "ce.o")
            with open(src, "w") as f:
                f.write(CE_MARK)
            r = subprocess.run([clang, "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", src, "-o", obj],
                               capture_output=True, text=True)
            if r.returncode != 0:
                self.skipTest("cannot build the tc-BPF CE marker: " + r.stderr.strip()[:200])
            with NetnsPair("ecnt") as pair:
                dev = pair.dev["a"]
                # a negotiates ECN and marks its segments on egress; they cross
                # the veth as GSO packets of several segments, which -c counts
                # as the segments they hold, as nstat does.
                pair.run("a", ["sysctl", "-qw", "net.ipv4.tcp_ecn=1"], check=True)
                pair.run("a", ["tc", "qdisc", "add", "dev", dev, "clsact"], check=True)
                pair.run("a", ["tc", "filter", "add", "dev", dev, "egress", "bpf", "da", "obj", obj, "sec", "tc"],
                         check=True)
                before = nstat(pair, "b", "IpExtInCEPkts")
                run = run_tool(["ipecn", "-c", "-4"],
                               lambda: tcp_session(pair, "b", pair.addr4["b"], 5401, 300000))
                marked = nstat(pair, "b", "IpExtInCEPkts") - before
        self.assertEqual(run.rc, 0, run)
        rows = {(r[0], r[1]): int(r[2]) for r in (l.split() for l in run.lines[2:])}
        self.assertGreater(marked, 100)
        self.assertEqual(rows.get((pair.addr4["a"], pair.addr4["b"])), marked, run)
        self.assertIsNone(rows.get((pair.addr4["b"], pair.addr4["a"])), run)


if __name__ == "__main__":
    unittest.main()
