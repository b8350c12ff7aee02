"""Scanning a big root's queues in a few forked processes, for the one-shot CLI commands.

Listing a directory is mostly kernel time (``getdents``: ~90% of ``os.listdir`` on ext4),
and listings of different directories proceed side by side on different cores, which
threads cannot give us (CPython's ``listdir`` takes the GIL back for every entry). Forked
children and this process take chunks of queues from one work pipe as each gets free
(:func:`scan_pooled`), and the children send back only the counts, marshalled through a
pipe. On a 2-core machine a 200k-message root scans in a little over half the time; on a
login node with more cores and a network file system the gain is larger.

Only for single-threaded processes (``stats``/``check``): forking a threaded process (the
TUI's workers) is unsafe, so :meth:`qconsole.scan.Root.scan` forks only when asked to.
A child that fails for any reason is not trusted: its queues are scanned again here.
"""

from __future__ import annotations

import fcntl
import marshal
import os
import time

from ...model import QueueScan

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    #: a scan and what ``each`` made of it there (None without one)
    Done = tuple[QueueScan, Any]

#: below this much directory data (st_size summed over the listings) one process is as quick
#: as forking: ~1.5 MB is ~25k ddmq names or ~40k VSQS names on ext4
MIN_PARALLEL_BYTES = 1_500_000
#: at most this many processes, however many cores: a shared login node is not ours alone
MAX_JOBS = 4

#: what a child sends back per queue: every QueueScan field but the (uncollected) messages, in
#: the order of QueueScan's arguments (its slots' order), so a scan is rebuilt positionally
_FIELDS = tuple(s for s in QueueScan.__slots__ if s != "messages")
_MESSAGES_AT = QueueScan.__slots__.index("messages")


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the CPUs this process may use (cgroups, taskset)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _runnable_others() -> int | None:
    """Tasks runnable right now besides this process (Linux's count in ``/proc/loadavg``)."""
    try:
        with open("/proc/loadavg", "rb") as fh:
            return max(0, int(fh.read().split()[3].split(b"/")[0]) - 1)  # "running/total": we are one
    except (OSError, ValueError, IndexError):
        return None


#: a core counted busy is looked at this many times more, this far apart (s), before it counts
_RECHECKS, _RECHECK_S = 2, 0.001


def spare_cpus() -> int:
    """CPUs not busy with other work right now, this process's own included (at least 1): a
    second process only helps when there is an idle core; on a saturated login node it only
    adds the cost of handing work over. Linux's instantaneous count of runnable tasks
    (``/proc/loadavg``), else the 1-minute load average (as ``make -l`` judges).

    A task runnable for an instant (the shell that started us on its way to wait(), a kernel
    thread) is not a busy core: one in ten runs met one here and scanned a root in one process
    at twice the time. So a count of others is read again twice, a millisecond apart, and the
    least of the three is taken; a machine that is really busy stays busy in all three."""
    others = _runnable_others()
    if others is None:
        try:
            others = int(os.getloadavg()[0])
        except (AttributeError, OSError):
            others = 0
    else:
        for _ in range(_RECHECKS):
            if others <= 0:
                break
            time.sleep(_RECHECK_S)
            again = _runnable_others()
            if again is not None:
                others = min(others, again)
    return max(1, available_cpus() - max(0, others))


def auto_jobs(sizes: list[int]) -> int:
    """How many processes to scan with, from the listings' sizes and the idle CPUs: 1 for a
    small root or a busy machine."""
    if not hasattr(os, "fork") or sum(sizes) < MIN_PARALLEL_BYTES:
        return 1
    return max(1, min(MAX_JOBS, spare_cpus(), len(sizes)))


def dir_size(paths: list[str]) -> int:
    """Bytes of directory data behind one queue's listings: a cheap guess at listing cost. No
    link is followed: a queue not yet judged (ddmq's queue_candidates) may have a work/ that is
    a symlink out of the root (a dead NFS mount there would hang the count)."""
    total = 0
    for path in paths:
        try:
            total += os.stat(path, follow_symlinks=False).st_size
        except OSError:
            pass
    return total


#: past this many queues none is sized: a stat per queue would cost more than it balances
#: (the pool balances as it goes), and so many listings are worth a second process anyway
MANY_QUEUES = 256


def arrange(root: str, names: list[str], listing_dirs: Callable[[str, str], list[str]],
            jobs: int | None) -> tuple[list[str], int]:
    """The queues in the order to hand them out (biggest first, when sized) and how many
    processes to scan with: ``jobs``, or (None) as many as pay off on this root right now."""
    if len(names) > MANY_QUEUES:
        if jobs is None:
            jobs = auto_jobs([MIN_PARALLEL_BYTES, MIN_PARALLEL_BYTES])
        return names, min(jobs, len(names))
    sizes = {n: dir_size(listing_dirs(root, n)) for n in names}
    order = sorted(names, key=lambda n: (-sizes[n], n))
    return order, auto_jobs(list(sizes.values())) if jobs is None else min(jobs, len(names))


#: Work goes out as 4-byte records, each the index of a chunk of queues, all written into one
#: pipe before anyone reads. Readers of a pipe are served one at a time, so a 4-byte read
#: takes exactly one record: each chunk goes to exactly one process, whichever is free first.
#: A big queue then holds up no one else, with nothing sized up front.
_RECORD = 4
#: one page of records: a pipe holds at least that much even when the user's pipe-buffer
#: allowance is spent (records that do not fit are scanned by the parent at the end anyway)
_MAX_RECORDS = 1024
#: about this many chunks per process: fewer reads than one per queue, and still a fair share
_CHUNKS_PER_JOB = 64


def _pack(done: list[Done]) -> bytes:
    return marshal.dumps([[getattr(scan, f) for f in _FIELDS] + [extra] for scan, extra in done])


def _unpack(data: bytes) -> list[Done]:
    at = _MESSAGES_AT  # positional: half the time of keywords, for thousands of queues
    return [(QueueScan(*values[:at], None, *values[at:-1]), values[-1]) for values in marshal.loads(data)]


def _frames(data: bytes) -> list[Done]:
    """What a child sent: frames of a 4-byte length and a _pack'ed chunk; ValueError when cut short."""
    out: list[Done] = []
    view, pos = memoryview(data), 0
    while pos < len(data):
        size = int.from_bytes(view[pos:pos + 4], "little")
        if size < 1 or pos + 4 + size > len(data):
            raise ValueError("a frame cut short")
        out.extend(_unpack(view[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return out


def _take(work: int, order: list[str], chunk: int, scan_share: Callable[[list[str]], list[QueueScan]],
          each: Callable[[QueueScan], Any] | None, sink: Callable[[list[Done]], None] | None = None,
          between: Callable[[], None] | None = None) -> list[Done]:
    """Scan chunk after chunk as long as the work pipe has records; each chunk's results go
    to ``sink`` as they come, when given; ``between`` runs after each chunk."""
    out: list[Done] = []
    while True:
        record = os.read(work, _RECORD)
        if len(record) != _RECORD:  # end of the work (a short read cannot happen: see _RECORD)
            return out
        start = int.from_bytes(record, "little") * chunk
        scans = scan_share(order[start:start + chunk])
        done = list(zip(scans, map(each, scans)) if each else ((s, None) for s in scans))
        if sink is None:
            out.extend(done)
        else:
            sink(done)
        if between is not None:
            between()


#: a child's result pipe, if the kernel allows (the parent also empties it between its own
#: chunks): a child never waits long for the parent, busy scanning, to read what it sent
_RESULT_PIPE = 1 << 20


def _drain(children: list[tuple[int, int]], got: dict[int, bytearray]) -> None:
    """What the children have sent so far, without waiting (their pipes are non-blocking)."""
    for _pid, rfd in children:
        buf = got[rfd]
        try:
            while True:
                data = os.read(rfd, 1 << 20)
                if not data:
                    break
                buf += data
        except BlockingIOError:
            pass


def _child(work: int, order: list[str], chunk: int, scan_share: Callable[[list[str]], list[QueueScan]],
           each: Callable[[QueueScan], Any] | None, wfd: int) -> None:
    """Scan, sending each chunk's results as a frame as soon as it is done (packing them goes
    on beside the parent's scanning, not after it), and leave without running the parent's
    exit handlers or flushing its buffers."""
    code = 1

    def send(done: list[Done]) -> None:
        data = _pack(done)
        view = memoryview(len(data).to_bytes(4, "little") + data)
        while view:
            view = view[os.write(wfd, view):]

    try:
        _take(work, order, chunk, scan_share, each, send)
        code = 0
    finally:
        os._exit(code)


def scan_pooled(order: list[str], jobs: int, scan_share: Callable[[list[str]], list[QueueScan]],
                each: Callable[[QueueScan], Any] | None = None) -> dict[str, Done]:
    """Every queue of ``order`` scanned by this process and ``jobs - 1`` forked ones, each
    taking the next chunk when done with its last. A queue no child reported (a child that
    failed, or work that did not fit the pipe) is scanned here. ``scan_share`` counts a list
    of queues, in their order; ``each`` (a marshallable result, e.g. the queue's part of a
    document) runs on every scan in the process that made it, so that work is shared too."""

    def here(names: list[str]) -> list[Done]:
        scans = scan_share(names)
        return list(zip(scans, map(each, scans) if each else [None] * len(scans)))

    chunk = max(1, -(-len(order) // min(_MAX_RECORDS, jobs * _CHUNKS_PER_JOB)))
    n_chunks = -(-len(order) // chunk)
    try:
        work, feed = os.pipe()
    except OSError:  # no descriptor to spare: all of it here
        return dict(zip(order, here(order)))
    try:  # at most PIPE_BUF bytes: written whole or not at all (then all is scanned here)
        os.set_blocking(feed, False)
        os.write(feed, b"".join(i.to_bytes(_RECORD, "little") for i in range(n_chunks)))
    except OSError:
        pass
    finally:
        os.close(feed)  # readers see the end of the work once the records are taken
    children: list[tuple[int, int]] = []
    for _ in range(jobs - 1):
        try:
            rfd, wfd = os.pipe()
        except OSError:
            break
        try:
            fcntl.fcntl(wfd, fcntl.F_SETPIPE_SZ, _RESULT_PIPE)
        except (AttributeError, OSError):
            pass  # not Linux, or over the user's pipe-buffer allowance: the child waits for us
        try:
            pid = os.fork()
        except OSError:  # no process to spare (ulimit -u, memory): fewer helpers
            os.close(rfd)
            os.close(wfd)
            break
        if pid == 0:
            os.close(rfd)
            _child(work, order, chunk, scan_share, each, wfd)
        os.close(wfd)
        os.set_blocking(rfd, False)
        children.append((pid, rfd))
    sent: dict[int, bytearray] = {rfd: bytearray() for _, rfd in children}
    try:
        results = {d[0].name: d for d in _take(work, order, chunk, scan_share, each,
                                                 between=(lambda: _drain(children, sent)) if children else None)}
    finally:
        os.close(work)
    wanted = set(order)
    for pid, rfd in children:
        os.set_blocking(rfd, True)
        with open(rfd, "rb") as pipe:  # closes rfd
            data = bytes(sent[rfd]) + pipe.read()
        _, status = os.waitpid(pid, 0)
        if status != 0:
            continue  # not trusted: whatever it took is scanned again below
        try:
            got = _frames(data)
        except (ValueError, EOFError, TypeError):
            continue
        if all(d[0].name in wanted for d in got):
            results.update((d[0].name, d) for d in got)
    missing = [n for n in order if n not in results]
    if missing:
        results.update(zip(missing, here(missing)))
    return results
