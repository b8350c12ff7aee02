"""Scanning a big root's queues in a few forked processes, for the one-shot CLI commands.

Listing a directory is mostly kernel time (``getdents``: ~90% of ``os.listdir`` on ext4),
and listings of different directories proceed side by side on different cores, which
threads cannot give us (CPython's ``listdir`` takes the GIL back for every entry). A forked
child scans its share of the queues and sends back only the counts, marshalled through a
pipe. On a 2-core machine a 200k-message root scans in a little over half the time; on a
login node with more cores and a network file system the gain is larger.

Only for single-threaded processes (``stats``/``check``): forking a threaded process (the
TUI's workers) is unsafe, so :meth:`qconsole.scan.Root.scan` forks only when asked to.
A child that fails for any reason is not trusted: its queues are scanned again here.
"""

from __future__ import annotations

import marshal
import os

from ...model import QueueScan

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable

#: below this much directory data (st_size summed over the listings) one process is as quick
#: as forking: ~1.5 MB is ~25k ddmq names or ~40k VSQS names on ext4
MIN_PARALLEL_BYTES = 1_500_000
#: at most this many processes, however many cores: a shared login node is not ours alone
MAX_JOBS = 4

#: what a child sends back per queue: every QueueScan field but the (uncollected) messages
_FIELDS = tuple(s for s in QueueScan.__slots__ if s != "messages")


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use (cgroups, taskset)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_jobs(sizes: list[int]) -> int:
    """How many processes to scan with, from the listings' sizes: 1 for a small root."""
    if not hasattr(os, "fork") or sum(sizes) < MIN_PARALLEL_BYTES:
        return 1
    return max(1, min(MAX_JOBS, available_cpus(), len(sizes)))


def dir_size(paths: list[str]) -> int:
    """Bytes of directory data behind one queue's listings: a cheap guess at listing cost."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            pass
    return total


#: past this many queues the planner sizes each by one listing's st_size, not all of them:
#: a root of thousands of small queues would otherwise pay a stat per work/ too
MANY_QUEUES = 256


def listing_sizes(root: str, names: list[str], listing_dirs: Callable[[str, str], list[str]]) -> dict[str, int]:
    """Each queue's directory data in bytes, the planner's guess at its listing cost."""
    if len(names) <= MANY_QUEUES:
        return {n: dir_size(listing_dirs(root, n)) for n in names}
    join = os.path.join
    return {n: dir_size([join(root, n)]) for n in names}


def plan(sizes: dict[str, int], jobs: int) -> list[list[str]]:
    """Queues split into ``jobs`` shares of similar total size (largest first, to the lightest)."""
    shares: list[list[str]] = [[] for _ in range(jobs)]
    loads = [0] * jobs
    for name in sorted(sizes, key=lambda n: (-sizes[n], n)):
        i = loads.index(min(loads))
        shares[i].append(name)
        loads[i] += sizes[name] + 1
    return [s for s in shares if s]


def _pack(scans: list[QueueScan]) -> bytes:
    return marshal.dumps([[getattr(scan, f) for f in _FIELDS] for scan in scans])


def _unpack(data: bytes) -> list[QueueScan]:
    return [QueueScan(**dict(zip(_FIELDS, values))) for values in marshal.loads(data)]


def _child(share: list[str], scan_share: Callable[[list[str]], list[QueueScan]], wfd: int) -> None:
    """Scan, write, and leave without running the parent's exit handlers or flushing its buffers."""
    code = 1
    try:
        data = _pack(scan_share(share))
        view = memoryview(data)
        while view:
            view = view[os.write(wfd, view):]
        code = 0
    finally:
        os._exit(code)


def scan_shares(shares: list[list[str]], scan_share: Callable[[list[str]], list[QueueScan]]) -> dict[str, QueueScan]:
    """Every share but the first in a forked child, the first here; a failed child's share again here.
    ``scan_share`` counts a list of queues, in their order."""
    children: list[tuple[int, int, list[str]]] = []
    for share in shares[1:]:
        try:
            rfd, wfd = os.pipe()
        except OSError:  # no descriptor to spare: scan it here instead
            shares[0] = shares[0] + share
            continue
        try:
            pid = os.fork()
        except OSError:  # no process to spare (ulimit -u, memory): scan it here instead
            os.close(rfd)
            os.close(wfd)
            shares[0] = shares[0] + share
            continue
        if pid == 0:
            os.close(rfd)
            _child(share, scan_share, wfd)
        os.close(wfd)
        children.append((pid, rfd, share))
    results = dict(zip(shares[0], scan_share(shares[0])))
    for pid, rfd, share in children:
        with open(rfd, "rb") as pipe:  # closes rfd
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        got: list[QueueScan] = []
        if status == 0:
            try:
                got = _unpack(data)
            except (ValueError, EOFError, TypeError):
                got = []
        if [s.name for s in got] == share:
            results.update((s.name, s) for s in got)
        else:
            results.update(zip(share, scan_share(share)))
    return results
