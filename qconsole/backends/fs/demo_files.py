"""What both file layouts' demos share: writing a file the way no client lists it until done."""

from __future__ import annotations

import os
import random
import threading

from .listing import QC_TEMP_PREFIX


def write_atomic(path: str, data: bytes) -> None:
    """Temp name (never listed by a client: starts with .qconsole-, no .ddmq), fsync, rename."""
    d = os.path.dirname(path)
    tmp = os.path.join(d, f"{QC_TEMP_PREFIX}demo-{os.getpid()}-{threading.get_ident()}-{random.getrandbits(32):08x}")
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)
