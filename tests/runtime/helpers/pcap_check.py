#!/usr/bin/env python3
"""skboutput()'s pcap files, read back.

usage: pcap_check.py send PORT PAYLOAD   -- one UDP datagram to 127.0.0.1:PORT
       pcap_check.py check FILE PORT PAYLOAD
Check prints what the file holds: its link type and timestamp resolution,
then for each packet that is our datagram (raw IP, UDP to PORT, PAYLOAD),
"udp to PORT: PAYLOAD" and whether its time is within a minute of now."""
import socket
import struct
import sys
import time

if sys.argv[1] == "send":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(sys.argv[3].encode(), ("127.0.0.1", int(sys.argv[2])))
    sys.exit(0)

path, port, payload = sys.argv[2], int(sys.argv[3]), sys.argv[4].encode()
data = open(path, "rb").read()
magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
print("magic %#x version %d.%d linktype %d" % (magic, major, minor, linktype))
pos, packets = 24, 0
while pos + 16 <= len(data):
    sec, nsec, incl, orig = struct.unpack("<IIII", data[pos:pos + 16])
    pkt = data[pos + 16:pos + 16 + incl]
    pos += 16 + incl
    packets += 1
    if len(pkt) < 28 or pkt[0] >> 4 != 4 or pkt[9] != 17:
        continue
    ihl = (pkt[0] & 15) * 4
    src = socket.inet_ntoa(pkt[12:16])
    dport, = struct.unpack("!H", pkt[ihl + 2:ihl + 4])
    body = pkt[ihl + 8:]
    if dport == port and body == payload:
        recent = abs(sec + nsec / 1e9 - time.time()) < 60
        print("udp from %s to %d: %s (%d bytes, %s)" % (src, dport, body.decode(), incl,
                                                      "now" if recent else "time off"))
print("packets %d, %d bytes left over" % (packets, len(data) - pos))
