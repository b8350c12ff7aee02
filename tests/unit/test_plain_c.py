"""A hostile review of the C reader of plain small queues (backends/fs/_plain.c).

Whenever the C module answers (not None) it must give exactly what the exact Python path
gives; whatever a queue directory holds it must not leak a descriptor or a reference, nor
read anything outside the root. These tests feed it what anyone who can write a queue can
plant: odd names, FIFOs, sub-directories, symlinks, ddmq's own files as the wrong kind.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qconsole.backends.ddmq import layout as ddmq
from qconsole.backends.fs import detect, listing
from qconsole.backends.vsqs import layout as vsqs
from qconsole.errors import RootError

NOW = 1_700_000_000.0
CUTOFF = int(NOW)


@pytest.fixture
def c_module():
    if listing.plain_c is None:
        if os.environ.get("CI") == "true":
            pytest.fail("qconsole.backends.fs._plain was not built")
        pytest.skip("qconsole.backends.fs._plain not built here")
    return listing.plain_c


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _fast_tmp(tmp_path):
    """A directory on tmpfs when there is one (100,001 names in ~0.5 s), else tmp_path."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        d = tempfile.mkdtemp(dir="/dev/shm", prefix="qc-plain-")
        return d, True
    return str(tmp_path), False


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_ddmq_plain_closes_work_when_the_queue_listing_fails(c_module, tmp_path):
    """The queue directory's listing failing (more names than the C reader holds, as when a
    listing grows past its size check; or a getdents error such as NFS's ESTALE) left work/'s
    descriptor open: one descriptor leaked per count of that queue, until a long-running
    console hit 'Too many open files'."""
    base, fast = _fast_tmp(tmp_path)
    try:
        q = os.path.join(base, "q")
        os.makedirs(os.path.join(q, "work"))
        open(os.path.join(q, "ddmq.yaml"), "w").close()
        fd = os.open(q, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with open(os.path.join(q, "1.17000000001.ddmqa"), "w"):
                pass
            for i in range(100_001):  # one more than the reader holds (MAX_NAMES)
                if fast:
                    os.link("1.17000000001.ddmqa", f"1.17000000001.ddmq{i}", src_dir_fd=fd, dst_dir_fd=fd)
                else:
                    os.close(os.open(f"1.17000000001.ddmq{i}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        finally:
            os.close(fd)
        before = _open_fds()
        for _ in range(3):  # (a size limit the caller does not set: the listing is read)
            assert c_module.ddmq_plain(q, 10**12, 20, 64, 11, CUTOFF) is None
        assert _open_fds() == before
    finally:
        if fast:
            shutil.rmtree(base)
