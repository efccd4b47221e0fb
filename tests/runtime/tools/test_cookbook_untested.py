"""The cookbook's entries for hardware the test kernel lacks (SCSI, NVMe,
Wi-Fi: docs/one-liners.md marks them `untested`): each command is compiled
and loaded (--dry-run) in a mount namespace of its own whose tracefs is a
tmpfs holding format files made for the test, laid out as the kernel's
(include/trace/events/scsi.h, drivers/nvme/host/trace.h, net/mac80211/trace.h,
drivers/net/wireless/intel/iwlwifi/iwl-devtrace-*.h). Also: every entry of
the cookbook has a test, and `bpfscope --examples` prints them all."""
import os
import re
import subprocess
import tempfile
import unittest

from cookbook import argv, entries
from toolrun import BPFSCOPE

HERE = os.path.dirname(os.path.abspath(__file__))
E = entries()

SCSI_CMD = [("unsigned int", "host_no"), ("unsigned int", "channel"), ("unsigned int", "id"), ("unsigned int", "lun"),
            ("unsigned int", "opcode"), ("unsigned int", "cmd_len"), ("int", "driver_tag"),
            ("int", "scheduler_tag"), ("unsigned int", "data_sglen"), ("unsigned int", "prot_sglen"),
            ("unsigned char", "prot_op"), ("__data_loc unsigned char[]", "cmnd")]
SCSI_DONE = SCSI_CMD[:4] + [("int", "result")] + SCSI_CMD[4:] + [
    ("u8", "sense_key"), ("u8", "asc"), ("u8", "ascq")]
NVME_SETUP = [("char", "disk[32]"), ("int", "ctrl_id"), ("int", "qid"), ("u8", "opcode"), ("u8", "flags"),
              ("u8", "fctype"), ("u16", "cid"), ("u32", "nsid"), ("bool", "metadata"), ("u8", "cdw10[24]")]
NVME_DONE = [("char", "disk[32]"), ("int", "ctrl_id"), ("int", "qid"), ("int", "cid"), ("u64", "result"),
             ("u8", "retries"), ("u8", "flags"), ("u16", "status")]
WIPHY = [("char", "wiphy_name[32]")]
IWL_IO = [("__data_loc char[]", "dev"), ("u32", "offs"), ("u32", "val")]
EVENTS = {
    "scsi": {"scsi_dispatch_cmd_start": SCSI_CMD, "scsi_dispatch_cmd_error": SCSI_CMD + [("int", "rtn")],
             "scsi_dispatch_cmd_done": SCSI_DONE, "scsi_dispatch_cmd_timeout": SCSI_DONE,
             "scsi_eh_wakeup": [("unsigned int", "host_no")]},
    "nvme": {"nvme_setup_cmd": NVME_SETUP, "nvme_complete_rq": NVME_DONE,
             "nvme_sq": [("char", "disk[32]"), ("int", "ctrl_id"), ("int", "qid"), ("u16", "sq_head"),
                         ("u16", "sq_tail")]},
    "mac80211": {"drv_start": WIPHY, "drv_stop": WIPHY + [("bool", "suspend")], "drv_tx_frames_pending": WIPHY},
    "iwlwifi": {"iwlwifi_dev_hcmd": [("__data_loc char[]", "dev"), ("u32", "flags")]},
    "iwlwifi_io": {"iwlwifi_dev_ioread32": IWL_IO, "iwlwifi_dev_iowrite32": IWL_IO},
}
SIZES = {"u8": 1, "unsigned char": 1, "bool": 1, "char": 1, "u16": 2, "u32": 4, "int": 4, "unsigned int": 4,
         "u64": 8}


def format_file(name, eid, fields):
    """A tracefs format file: the common fields, then `fields` naturally
    aligned (a __data_loc is 4 bytes)."""
    lines = ["name: %s" % name, "ID: %d" % eid, "format:",
             "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;",
             "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;",
             "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;",
             "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;", ""]
    off = 8
    for ctype, fname in fields:
        m = re.match(r"(\w+)\[(\d+)\]$", fname)
        elem = 4 if ctype.startswith("__data_loc") else SIZES[ctype]
        size = elem * int(m.group(2)) if m else elem
        off = (off + elem - 1) // elem * elem
        signed = 1 if ctype in ("int",) else 0
        lines.append("\tfield:%s %s;\toffset:%d;\tsize:%d;\tsigned:%d;" % (ctype, fname, off, size, signed))
        off += size
    lines += ["", 'print fmt: "made for bpfscope\'s cookbook test"', ""]
    return "\n".join(lines)


SETUP = r"""
set -e
mount -t tmpfs bpfscope-cookbook /sys/kernel/tracing
cp -r "$1"/. /sys/kernel/tracing/
shift
exec "$@"
"""


class CookbookUntestedTest(unittest.TestCase):
    def dry_run(self, command):
        """`command --dry-run` in a mount namespace whose tracefs holds only
        the made-up events."""
        with tempfile.TemporaryDirectory(prefix="bpfscope-cookbook-") as root:
            names, eid = [], 9000
            for cat, events in EVENTS.items():
                for ev, fields in events.items():
                    eid += 1
                    d = os.path.join(root, "events", cat, ev)
                    os.makedirs(d)
                    with open(os.path.join(d, "format"), "w") as f:
                        f.write(format_file(ev, eid, fields))
                    with open(os.path.join(d, "id"), "w") as f:
                        f.write("%d\n" % eid)
                    names.append("%s:%s" % (cat, ev))
            with open(os.path.join(root, "available_events"), "w") as f:
                f.write("\n".join(names) + "\n")
            return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", SETUP, "sh", root] +
                                  argv(command, "--dry-run"), capture_output=True, text=True, timeout=60)

    def test_untested_entries_compile_and_load(self):
        untested = [eid for eid, e in E.items() if e["untested"]]
        self.assertEqual(untested, ["disk-9", "disk-10", "disk-11", "disk-12", "net-21", "net-23"])
        for eid in untested:
            e = E[eid]
            cat = re.search(r"t:(\w+?)\*?:", e["bpftrace"]).group(1)
            if os.path.exists("/sys/kernel/tracing/events/" + cat):
                continue  # this kernel has them: compiled as they are below
            for form in ("bcc", "bpftrace"):
                with self.subTest(entry=eid, form=form):
                    r = self.dry_run(e[form])
                    self.assertEqual(r.returncode, 0, (e[form], r.stderr))
                    self.assertEqual(r.stderr, "", e[form])

    def test_untested_entries_fail_clearly_here(self):
        # Without the events: the error names the probe, never a verifier
        # or permission problem.
        for eid in ("disk-9", "disk-12", "net-23"):
            e = E[eid]
            r = subprocess.run(argv(e["bpftrace"], "--dry-run"), capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                continue  # the hardware's driver is here
            self.assertRegex(r.stderr, r"(match(es)? nothing|No matches for tracepoint)", r.stderr)

    def test_every_command_as_written_compiles_and_loads(self):
        # The runs of test_cookbook_disk/net add -f json; here each command
        # exactly as printed (--dry-run: compiled and loaded, not attached).
        tools = subprocess.run([BPFSCOPE, "tools"], capture_output=True, text=True, timeout=60).stdout
        have_trace = any(l.split()[:1] == ["trace"] for l in tools.splitlines())
        for eid, e in E.items():
            if e["untested"]:
                continue
            for form in ("bcc", "bpftrace"):
                if not e[form] or (e[form].startswith("bpfscope trace ") and not have_trace):
                    continue
                with self.subTest(entry=eid, form=form):
                    r = subprocess.run(argv(e[form], "--dry-run"), capture_output=True, text=True, timeout=60)
                    self.assertEqual(r.returncode, 0, (e[form], r.stderr))

    def test_every_entry_has_a_test(self):
        tested = set()
        for name in ("test_cookbook_disk.py", "test_cookbook_net.py"):
            with open(os.path.join(HERE, name)) as f:
                for m in re.finditer(r"def test_((?:disk|net)_\w+)\(", f.read()):
                    parts = m.group(1).split("_")
                    topic = parts[0]
                    tested |= {"%s-%s" % (topic, p) for p in parts[1:] if p.isdigit()}
        untested = {eid for eid, e in E.items() if e["untested"]}
        self.assertEqual(set(E) - tested - untested, set())
        self.assertEqual(len(E), 35)

    def test_examples_print_every_entry(self):
        r = subprocess.run([BPFSCOPE, "--examples"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r)
        for eid, e in E.items():
            self.assertIn("%s  %s\n" % (eid, e["question"]), r.stdout)
            for form in ("bcc", "bpftrace"):
                if e[form]:
                    self.assertIn("    %s\n" % e[form], r.stdout)
        r = subprocess.run([BPFSCOPE, "--examples", "disk"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r)
        ids = re.findall(r"^(\S+)  ", r.stdout, re.M)
        self.assertEqual(ids, [eid for eid, e in E.items() if e["topic"] == "disk"])
        r = subprocess.run([BPFSCOPE, "--examples", "net-11"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.stdout.splitlines()[0], "net-11  TCP send bytes as a histogram", r)
        self.assertIn("(instead of kprobes on tcp_sendmsg: ", r.stdout)
        r = subprocess.run([BPFSCOPE, "--examples", "cpu"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 1, r)
        self.assertEqual(r.stderr, "ERROR: --examples: no topic or entry cpu; the topics:\n"
                                   "    disk   Disks (chapter 9)\n    net    Networking (chapter 10)\n")


if __name__ == "__main__":
    unittest.main()
