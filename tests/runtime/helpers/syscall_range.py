#!/usr/bin/env python3
"""Makes system calls FIRST..LAST with harmless arguments (fd -1, NULL
pointers, zero sizes), so that each fails at once: for checking
syscall_name() against the kernel's syscalls:sys_enter_* tracepoints.
Only use ranges whose calls are safe with such arguments (424 and up:
pidfd_send_signal .. file_setattr)."""
import ctypes
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
first, last = int(sys.argv[1]), int(sys.argv[2])
if first < 424:
    raise SystemExit("syscall_range.py: numbers below 424 include fork, exit and others")
for n in range(first, last + 1):
    libc.syscall(ctypes.c_long(n), ctypes.c_long(-1), ctypes.c_long(0), ctypes.c_long(0),
                 ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
