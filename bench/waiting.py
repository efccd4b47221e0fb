"""Waiting for a tracer: shared by the bench scripts."""
import time


def wait_file(path, pattern, timeout, p):
    """True once `pattern` is in the first 4 KiB of `path`; False when the
    process `p` ends first or `timeout` seconds pass."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path, "rb") as f:
                if pattern.encode() in f.read(4096):
                    return True
        except FileNotFoundError:
            pass
        if p.poll() is not None:
            return False
        time.sleep(0.02)
    return False
