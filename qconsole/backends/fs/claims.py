"""Claims: how qconsole holds a message while it rewrites or moves it, and how a killed
qconsole's leftovers are put back (``qconsole recover``).

A claim is the message file renamed, in its own directory, to
``.qconsole-claim-<host>-<pid>-<token>-<relpath>`` (``/`` -> ``+``, ``.`` -> ``,``, so the name
never contains ``.ddmq`` and no client lists it). While claimed, no consumer can take it.

Moving it somewhere (ddmq requeue, move) goes in batches (:mod:`.batches`): claim, write the
new copy to ``.qconsole-tmp-<host>-<pid>-<token>`` in the destination (VSQS: also hard-linked
to an exclusive ``<id>.new``), fsync, one journal per batch, commit renames, clean up.

:func:`recover` puts back what a killed qconsole left: batch journals first
(:func:`.batches.recover_batches`), then, per token, what no batch journal names -- including
the per-message journals ``.qconsole-journal-...-<token>`` an older qconsole wrote (one per
message, beside its claim: no journal, or its commit source still there -> not committed:
drop the new copy, put the claim back; commit source gone -> committed: drop the claim).
Every message ends in exactly one place.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import OperationError, QConsoleError
from ...model import STATE_DIR

from .listing import QC_TEMP_PREFIX
from . import safety

CLAIM, TMP, JOURNAL, CFG, BATCH = "claim", "tmp", "journal", "cfg", "batch"
KINDS = (CLAIM, TMP, JOURNAL, CFG, BATCH)
HOST = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:6]
#: another host's leftovers are only recovered when they are at least this old (seconds)
FOREIGN_HOST_GRACE = 300.0
_TOKEN_RE = re.compile(r"[0-9a-f]{8}")
_HOST_RE = re.compile(r"[0-9a-f]{6}")


_TOKENS: dict[str, int] = {"pid": -1, "next": 0}


def new_token() -> str:
    """8 hex digits, unique within this process: a counter from a random start (random
    tokens repeat: 100k of 32 bits do with odds of 2 in 3, and two claims of one batch then
    shared a tmp name). Other processes' names differ by host and pid."""
    pid = os.getpid()
    if _TOKENS["pid"] != pid:  # a forked child starts its own sequence
        _TOKENS["pid"], _TOKENS["next"] = pid, secrets.randbits(32)
    n = _TOKENS["next"]
    _TOKENS["next"] = (n + 1) & 0xFFFFFFFF
    return f"{n:08x}"


def encode_rel(relpath: str) -> str:
    return relpath.replace("/", "+").replace(".", ",")


def decode_rel(text: str) -> str:
    return text.replace("+", "/").replace(",", ".")


def owned_name(kind: str, token: str, relpath: str | None = None) -> str:
    name = f"{QC_TEMP_PREFIX}{kind}-{HOST}-{os.getpid()}-{token}"
    return f"{name}-{encode_rel(relpath)}" if relpath else name


@dataclass(frozen=True)
class Owned:
    """A parsed qconsole leftover name."""

    kind: str
    host: str
    pid: int
    token: str
    relpath: str | None


def parse_owned(name: str) -> Owned | None:
    """The parts of a qconsole leftover name, strictly (None for anything else: left alone)."""
    if not name.startswith(QC_TEMP_PREFIX):
        return None
    parts = name[len(QC_TEMP_PREFIX):].split("-", 4)
    if len(parts) < 4 or parts[0] not in KINDS or not _HOST_RE.fullmatch(parts[1]):
        return None
    if not (parts[2].isascii() and parts[2].isdigit() and len(parts[2]) <= 10) or not _TOKEN_RE.fullmatch(parts[3]):
        return None
    rel = decode_rel(parts[4]) if len(parts) == 5 else None
    if (parts[0] == CLAIM) != (rel is not None):
        return None
    return Owned(parts[0], parts[1], int(parts[2]), parts[3], rel)


#: seconds a process may seem to have started after a file it made (a wall-clock step forward
#: moves every start time read from /proc later; NTP slews small offsets instead)
PID_REUSE_SLACK = 5.0


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with ``pid`` runs (this process counts as gone)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError, ValueError):
        return False
    except PermissionError:
        return True
    return True


def owner_alive(owned: Owned, st: os.stat_result | None, now: float | None = None) -> bool:
    """True when the qconsole that left this file may still be working on it."""
    if owned.host == HOST:
        # a live pid is that qconsole only if it ran when the file was made (ctime only grows):
        # a killed move's pid reused by another process left its claims hidden from consumers
        # ("left to a running qconsole") for as long as that process ran
        return pid_alive(owned.pid) and not (st is not None
                                             and started_after(owned.pid, st.st_ctime + PID_REUSE_SLACK))
    if st is None:
        return False
    # another host: a rename updates ctime, so a fresh leftover may be live
    return (time.time() if now is None else now) - st.st_ctime < FOREIGN_HOST_GRACE


# --------------------------------------------------------------------------- the transfer


@dataclass
class Placement:
    """A new copy prepared in ``dest_dir``: ``commit_from`` renamed to ``final`` makes it live."""

    dest_dir: str
    commit_from: str
    final: str
    tmp: str | None = None


class Claim:
    """One message held by this process; every step goes through ``c`` (:mod:`.safety`), on
    names in the message's directory, opened once per operation (:meth:`.safety.Confined.in_dir`)."""

    def __init__(self, c: safety.Confined, queue_dir: str, relpath: str, token: str | None = None) -> None:
        safety.check_relpath(relpath)
        self.c = c
        self.queue_dir = queue_dir
        self.relpath = relpath
        self.token = token or new_token()
        sub, _, self.name = relpath.rpartition("/")
        self.dir = os.path.join(queue_dir, sub) if sub else queue_dir
        self.claim_name = owned_name(CLAIM, self.token, relpath)
        self.d = c.in_dir(self.dir)

    @property
    def src(self) -> str:
        return os.path.join(self.dir, self.name)

    @property
    def path(self) -> str:
        return os.path.join(self.dir, self.claim_name)

    def acquire(self) -> bool:
        """Take the message; False when it is gone (consumed, acked or moved meanwhile)."""
        try:
            return self.d.rename(self.name, self.claim_name)
        except BaseException:
            # a ctrl+c during the rename syscall raises as it returns: the message is claimed
            # but no caller holds the claim to put it back, so it stayed hidden from consumers
            # until someone ran recover (nothing said so). Put it back before stopping.
            if self.c.lexists(self.path) and not self.c.lexists(self.src):
                self.restore()
            raise

    def read(self, max_size: int | None = None) -> bytes:
        """The claimed file's bytes: a regular file only (a FIFO or link is refused, not opened);
        QConsoleError, before reading, when it is larger than ``max_size``."""
        return self.d.read(self.claim_name, max_size=max_size)

    def restore(self) -> bool:
        """Put the message back where it was (never over another file)."""
        return self.c.link_noclobber(self.path, self.src)


def write_tmp(c: safety.Confined, dest_dir: str, data: bytes, token: str, gid: int) -> tuple[str, int]:
    """The new copy under a name no client lists; (its base name, its descriptor, still open:
    :class:`.batches.BatchWriter` fsyncs and closes it with the rest of its batch).

    ``gid``: the destination's group (one stat per operation, not per message).
    """
    name = owned_name(TMP, token)
    return name, c.in_dir(dest_dir, gid).create(name, data)


# --------------------------------------------------------------------------- recovery


@dataclass
class RecoverReport:
    restored: list[str] = field(default_factory=list)  # claims put back where they were
    completed: list[str] = field(default_factory=list)  # committed moves whose claim was dropped
    removed_temp: list[str] = field(default_factory=list)  # uncommitted copies and temp files
    live: list[str] = field(default_factory=list)  # leftovers of a qconsole still running
    problems: list[str] = field(default_factory=list)


Key = tuple[str, int, str]  # (host, pid, token): tokens are unique per process only


def _scan_dirs(c: safety.Confined, queue_dirs: list[str]) -> dict[Key, list[tuple[str, str, Owned]]]:
    """(host, pid, token) -> [(dir, name, owned)] over every queue directory and its work/."""
    found: dict[Key, list[tuple[str, str, Owned]]] = {}
    for qdir in queue_dirs:
        for d in (qdir, os.path.join(qdir, "work")):
            try:
                names = c.listdir(d)
            except (OSError, QConsoleError):
                continue
            for name in names:
                owned = parse_owned(name)
                if owned is not None:
                    found.setdefault((owned.host, owned.pid, owned.token), []).append((d, name, owned))
    return found


def _load_journal(c: safety.Confined, path: str) -> dict | None:
    try:
        doc = json.loads(c.read(path, max_size=safety.MAX_JOURNAL_BYTES))
    except (OSError, ValueError, QConsoleError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def _unlink_new_twin(c: safety.Confined, tmp_path: str) -> str | None:
    """A tmp linked to ``<id>.new`` whose journal never got written: remove that ``.new``."""
    st = c.lstat(tmp_path)
    if st is None or st.st_nlink < 2:
        return None
    d = os.path.dirname(tmp_path)
    for name in c.listdir(d):
        if name.endswith(".new"):
            p = os.path.join(d, name)
            if c.same_file(p, tmp_path):
                c.unlink(p)
                return name
    return None


def _journal_problem(c: safety.Confined, root: str, doc: dict, owned: Owned, claim_rel: str | None,
                     is_message: Callable[[str], bool]) -> str | None:
    """Why a journal cannot be trusted (None when every field validates)."""
    if doc.get("token") != owned.token:
        return "its token is not the one in its name"
    if claim_rel is not None and doc.get("src") != claim_rel:
        return "its src is not the claimed message"
    dest, commit_from, final, tmp = doc.get("dest"), doc.get("commit_from"), doc.get("final"), doc.get("tmp")
    try:
        safety.validate_queue_name(dest)  # type: ignore[arg-type]
        safety.check_name(commit_from, "commit_from")
        safety.check_name(final, "final")
        if tmp is not None:
            safety.check_name(tmp, "tmp")
    except QConsoleError as err:
        return str(err)
    # the copy is this journal's own (its process's, its token's) temp file, or a ``.new``
    # linked to it (checked before anything is removed): a planted journal naming another
    # queue's ``.new`` or another qconsole's temp file must not get them removed
    own = lambda name: _same_owner(parse_owned(name), owned)  # noqa: E731
    if tmp is not None and not own(tmp):
        return f"tmp {tmp!r} is not the journal's own qconsole temp file"
    if not own(commit_from) and not (commit_from.endswith(".new") and tmp is not None):
        return f"commit_from {commit_from!r} is neither the journal's own temp file nor a .new beside it"
    if not is_message(final):
        return f"final {final!r} is not a message name"
    if not c.is_dir(os.path.join(root, dest)):
        return f"dest {dest!r} is not a queue"
    return None


def _same_owner(o: Owned | None, journal: Owned) -> bool:
    """A temp file of the journal's own process and token."""
    return o is not None and o.kind == TMP and (o.host, o.pid, o.token) == (journal.host, journal.pid, journal.token)


def recover(root_path: str, queue_dirs: list[str], *, force: bool = False,
            is_message: Callable[[str], bool] = lambda _n: True,
            id_live: Callable[[safety.Confined, str, str], bool] = lambda _c, _q, _n: False,
            msg_id: Callable[[str], str | None] | None = None) -> RecoverReport:
    """Finish or undo what killed qconsole processes left in these queue directories.

    Everything found is validated first -- names strictly, journals field by field, files
    must be regular files -- and whatever does not validate is reported and left alone.
    ``is_message``: whether a name is a message name of the layout; ``id_live(c, qdir, name)``:
    whether the id that message name carries is live in ``qdir`` in any state; ``msg_id``: the
    id of a message name, when a layout's transfers keep ids (a committed copy must carry it).

    One recover at a time per root (:class:`RecoverLock`): a second one waits for the first
    (OperationError when it still runs after :data:`RECOVER_LOCK_WAIT`), then sees what is
    left. A leftover gone between the listing and its turn was settled by someone else: not
    a problem.
    """
    from .batches import recover_batches

    report = RecoverReport()
    with safety.Confined(root_path) as c, RecoverLock(c, report) as lock:
        now = time.time()
        found = _scan_dirs(c, queue_dirs)
        recover_batches(c, root_path, found, force=force, now=now, is_message=is_message, id_live=id_live,
                        msg_id=msg_id, report=report, tick=lock.refresh)
        for key, items in sorted(found.items()):
            lock.refresh()
            try:
                _recover_token(c, root_path, items, force, now, is_message, id_live, report, msg_id)
            except (OSError, QConsoleError) as err:
                why = err.strerror if isinstance(err, OSError) else str(err)
                report.problems.append(f"leftovers of {key[2]}: {why}; left in place")
    return report


#: the root-wide lock a recover holds, in the root's ``.qconsole/`` (two recovers at once
#: each reported what the other had just settled as problems, and both exited 1)
RECOVER_LOCK = "recover.lock"
#: a lock file is written right after its exclusive create; one still empty this long after
#: (by ctime, s) was left by a writer killed in between, and holds nothing
LOCK_WRITE_S = 5.0
#: how long a recover waits for another one to finish before it gives up (seconds)
RECOVER_LOCK_WAIT = 20.0
#: how often the holder renews its lock's ctime: a lock unchanged for FOREIGN_HOST_GRACE is
#: stale (its holder is gone, stopped, or it was planted) and is broken
RECOVER_LOCK_REFRESH = 30.0


class RecoverLock:
    """``<root>/.qconsole/recover.lock``, an exclusive create (which NFS honours) holding
    ``<host> <pid> <time> recover <start>`` (the process's start time: a reused pid is no holder). Untrusted input like everything in the root: never
    followed (``O_NOFOLLOW``, read only when a regular file), and alive only while it changed
    within FOREIGN_HOST_GRACE (by ctime, which nobody can set back; the holder renews it)
    and, when it names this host, while its pid runs: a dead recover's lock, a planted one
    or a stale one of another host is broken, not waited on for ever. Where no lock can be
    made (no writable ``.qconsole/``, or one that is a link) the recover runs without it,
    as before: the lock only keeps two reports apart; every step of a recover is safe
    against another one anyway."""

    def __init__(self, c: safety.Confined, report: RecoverReport, wait: float | None = None) -> None:
        self.c, self.report = c, report
        self.wait = RECOVER_LOCK_WAIT if wait is None else wait
        self.path = os.path.join(c.root, STATE_DIR, RECOVER_LOCK)
        self.fd: int | None = None
        self.renewed = 0.0

    def __enter__(self) -> RecoverLock:
        self.take()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()

    def take(self) -> None:
        where = f"{STATE_DIR}/{RECOVER_LOCK}"
        try:
            self.c.makedirs(os.path.dirname(self.path))
        except (OSError, QConsoleError):
            return  # nowhere to lock: without it
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fd = self.c.create_exclusive(self.path, mode=0o644)
            except FileExistsError:
                st = self.c.lstat(self.path)
                holder = _lock_holder(self.c, self.path, st)
                if holder is None:
                    if not self._break(st):
                        self.report.problems.append(f"{where}: not a lock file and cannot be removed; "
                                                    "recovered without the lock")
                        return
                    continue
                if time.monotonic() >= deadline:
                    raise OperationError(f"another qconsole recover is running on this root ({holder}); "
                                         "run recover again when it is done") from None
                time.sleep(0.1)
                continue
            except (OSError, QConsoleError):
                return  # not writable: without it
            try:
                safety.write_all(fd, lock_line("recover"))
            except BaseException:
                os.close(fd)
                self.c.unlink(self.path)
                raise
            self.fd, self.renewed = fd, time.monotonic()
            return

    def _break(self, judged: os.stat_result | None) -> bool:
        """Remove the lock judged stale (unless it was replaced meanwhile); False when it cannot go."""
        if judged is None:
            return True
        st = self.c.lstat(self.path)
        if st is None or (st.st_dev, st.st_ino, st.st_ctime_ns) != (judged.st_dev, judged.st_ino, judged.st_ctime_ns):
            return True  # changed meanwhile: judged again
        try:
            self.c.unlink(self.path)  # the entry itself: a link is never followed
        except OSError:
            return False  # a planted directory
        return True

    def refresh(self) -> None:
        """Renew the lock's ctime (every RECOVER_LOCK_REFRESH): a long recover stays alive."""
        if self.fd is not None and time.monotonic() - self.renewed >= RECOVER_LOCK_REFRESH:
            self.renewed = time.monotonic()
            try:
                os.utime(self.fd)
            except OSError:
                pass

    def release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            mine = os.fstat(fd)
            st = self.c.lstat(self.path)
            if st is not None and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino):
                self.c.unlink(self.path)  # (not another recover's, which broke ours as stale)
        except (OSError, QConsoleError):
            pass
        finally:
            os.close(fd)


def _proc_start(pid: int) -> str | None:
    """The process's start time (clock ticks after boot, /proc/PID/stat field 22): with the
    pid, names one process for good; None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read(4096)
        return data.rsplit(b")", 1)[1].split()[19].decode("ascii")  # (the name may hold spaces and ')')
    except (OSError, IndexError, UnicodeDecodeError):
        return None


def started_after(pid: int, when: float) -> bool:
    """Whether the running process ``pid`` of this host started after epoch time ``when``
    (False where there is no /proc to tell): then it is not what a file named ``when`` with
    that pid was left by -- a pid is reused."""
    start = _proc_start(pid)
    if start is None or not start.isdigit():
        return False
    try:
        with open("/proc/stat", "rb") as fh:
            btime = next(int(line.split()[1]) for line in fh if line.startswith(b"btime "))
        return btime + int(start) / os.sysconf("SC_CLK_TCK") > when
    except (OSError, StopIteration, ValueError, IndexError):
        return False


def lock_line(what: str) -> bytes:
    """What a lock file of this process holds (recover's, a trash batch's): ``<host> <pid>
    <time> <what> <start>``, the start time naming the process for good (a pid is reused)."""
    return f"{HOST} {os.getpid()} {time.time():.0f} {what} {_proc_start(os.getpid()) or '-'}\n".encode()


def holder_here_alive(words: list[str]) -> bool | None:
    """For a lock's words (:func:`lock_line`) naming a pid of this host: whether that very process
    still runs. The pid of a killed holder is soon another process's, and a planted lock can name
    any running pid: only the process with the written start time holds it (review D). None when
    the lock names no pid of this host (another host's, or no lock qconsole wrote)."""
    if not (len(words) >= 2 and words[0] == HOST and words[1].isdigit() and len(words[1]) <= 10):
        return None
    pid = int(words[1])
    if not pid_alive(pid):
        return False
    start = _proc_start(pid)
    return start is None or (len(words) >= 5 and words[4] == start)


def unwritten(text: list[str], st: os.stat_result, now: float) -> bool:
    """A lock (recover's, a trash batch's) still empty LOCK_WRITE_S after it was made: its writer
    was killed between the create and the write (every later recover waited, then failed, for
    FOREIGN_HOST_GRACE)."""
    return not text and abs(now - st.st_ctime) >= LOCK_WRITE_S


def _lock_holder(c: safety.Confined, path: str, st: os.stat_result | None) -> str | None:
    """Who holds the recover lock, as a few safe words; None when it may be broken: gone,
    not a regular file, unchanged for FOREIGN_HOST_GRACE either way of the clock (the
    trash's rule, :func:`.trash._fresh`), or naming a pid of this host that does not run."""
    if st is None or not stat.S_ISREG(st.st_mode) or abs(time.time() - st.st_ctime) >= FOREIGN_HOST_GRACE:
        return None
    try:
        text = c.read(path, max_size=4096).decode("ascii", "replace").split()
    except (OSError, QConsoleError):
        text = []
    here = holder_here_alive(text)
    if here is not None:
        return f"pid {text[1]} on this host" if here else None
    if unwritten(text, st, time.time()):
        return None
    if text and _HOST_RE.fullmatch(text[0]):
        return f"on host {text[0]}"
    return "its lock is fresh"  # being written, or of an unknown writer: alive while fresh


def _recover_token(c: safety.Confined, root_path: str, items: list[tuple[str, str, Owned]], force: bool, now: float,
                   is_message: Callable[[str], bool], id_live: Callable[[safety.Confined, str, str], bool],
                   report: RecoverReport, msg_id: Callable[[str], str | None] | None = None) -> None:
    rel = lambda d, n: os.path.relpath(os.path.join(d, n), root_path)  # noqa: E731
    stats = {(d, n): c.lstat(os.path.join(d, n)) for d, n, _o in items}
    # gone since the listing: settled by someone else (another recover, or the qconsole that
    # made it); what is left is judged as a listing made now would show it
    items = [(d, n, o) for d, n, o in items if stats[(d, n)] is not None]
    if not items:
        return
    if not force and any(owner_alive(o, stats[(d, n)], now) for d, n, o in items):
        report.live.extend(rel(d, n) for d, n, _o in items)
        return
    # whatever is left alone is left whole, and every file of it is named and counted: a
    # claim left hides a message from every client
    leave = lambda why, culprits: _leave(report, rel, items, culprits, why)  # noqa: E731
    irregular = {(d, n): "not a regular file" for d, n, _o in items if not _is_reg(stats[(d, n)])}
    if irregular:
        leave(f"its token's leftover {rel(*next(iter(irregular)))} is not a regular file", irregular)
        return
    claims = [(d, n, o) for d, n, o in items if o.kind == CLAIM]
    journals = [(d, n, o) for d, n, o in items if o.kind == JOURNAL]
    tmps = [(d, n, o) for d, n, o in items if o.kind in (TMP, CFG)]
    # a claim is put back in its own directory, as the name it had: check that first
    targets = []
    bad: dict[tuple[str, str], str] = {}
    for d, n, o in claims:
        why = _claim_problem(d, o, is_message)
        if why:
            bad[(d, n)] = why
        qdir = os.path.dirname(d) if (o.relpath or "").startswith("work/") else d
        targets.append((d, n, o, qdir))
    if bad:
        leave(f"another claim of its token ({rel(*next(iter(bad)))}) does not validate", bad)
        return
    if len(claims) > 1 or len(journals) > 1:
        leave(f"its token {items[0][2].token} names {len(claims)} claims and {len(journals)} journals "
              "(one message has one of each at most)", {})
        return
    doc = None
    if journals:
        jd, jn, jo = journals[0]
        doc = _load_journal(c, os.path.join(jd, jn))
        if doc is not None:
            why = _journal_problem(c, root_path, doc, jo, claims[0][2].relpath if claims else None, is_message)
            if why:
                leave(f"its token's journal {rel(jd, jn)} does not validate",
                      {(jd, jn): f"journal does not validate ({why})"})
                return
    committed = False
    if doc is not None:
        dest_dir = os.path.join(root_path, doc["dest"])
        source_there = c.lexists(os.path.join(dest_dir, doc["commit_from"]))
        if not source_there:
            # the commit rename happened when the final message (in any state) is there
            if not id_live(c, dest_dir, doc["final"]):
                leave(f"its token's journal {rel(*journals[0][:2])} cannot be settled",
                      {journals[0][:2]: "the journal's commit source and final message are both missing"})
                return
            # a live final proves the commit only when it carries the claimed message's id
            # (ddmq keeps ids); a planted journal could name any live message, and dropping
            # the claim on its word would lose the message: without proof, left alone
            claimed = (claims[0][2].relpath or "").rpartition("/")[2] if claims else None
            if claims and (msg_id is None or msg_id(doc["final"]) is None
                           or msg_id(doc["final"]) != msg_id(claimed or "")):
                leave(f"its token's journal {rel(*journals[0][:2])} cannot be settled",
                      {journals[0][:2]: "nothing proves its commit happened (the final message does not carry "
                                        "the claimed id)"})
                return
            committed = True
        elif _is_reg(c.lstat(os.path.join(dest_dir, doc["commit_from"]))):
            # uncommitted: the prepared copy goes (a .new twin of the journal's tmp included,
            # and only when it is one: a .new of the same name may be a producer's)
            cf = os.path.join(dest_dir, doc["commit_from"])
            if not _same_owner(parse_owned(doc["commit_from"]), journals[0][2]) \
                    and not c.same_file(cf, os.path.join(dest_dir, doc["tmp"])):
                report.problems.append(f"{rel(dest_dir, doc['commit_from'])}: not the journal's copy; left alone")
                leave(f"its token's journal names {rel(dest_dir, doc['commit_from'])} as its copy, which it is not",
                      {})
                return
            c.unlink(cf)
            report.removed_temp.append(rel(dest_dir, doc["commit_from"]))
    for d, n, _o in tmps:
        p = os.path.join(d, n)
        if not committed:  # (also without a claim: an abort put the message back and died before this)
            twin = _unlink_new_twin(c, p)
            if twin:
                report.removed_temp.append(rel(d, twin))
        if c.unlink(p):
            report.removed_temp.append(rel(d, n))
    for d, n, o, qdir in targets:
        p = os.path.join(d, n)
        if committed:
            c.unlink(p)
            report.completed.append(rel(d, n))
            continue
        name = (o.relpath or "").rpartition("/")[2]
        if c.same_file(p, os.path.join(d, name)):  # put back, but the claim's name not yet dropped
            c.unlink(p)
            report.restored.append(rel(d, name))
            continue
        if id_live(c, qdir, name):
            report.problems.append(f"{rel(d, n)}: its id is live in the queue already; left in place")
            continue
        if c.link_noclobber(p, os.path.join(d, name)):
            report.restored.append(rel(d, name))
        else:
            report.problems.append(f"{rel(d, n)}: could not put back as {o.relpath!r}; left in place")
    for d, n, _o in journals:
        c.unlink(os.path.join(d, n))


def _leave(report: RecoverReport, rel: Callable[[str, str], str], items: list[tuple[str, str, Owned]],
           culprits: dict[tuple[str, str], str], why: str) -> None:
    """A problem line for every leftover in ``items``, left alone: the ``culprits`` first,
    with their own reason, then the others with ``why``."""
    for (d, n), reason in culprits.items():
        report.problems.append(f"{rel(d, n)}: {reason}; left alone")
    for d, n, _o in items:
        if (d, n) not in culprits:
            report.problems.append(f"{rel(d, n)}: {why}; left alone")


def _is_reg(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISREG(st.st_mode)


def _claim_problem(d: str, o: Owned, is_message: Callable[[str], bool]) -> str | None:
    try:
        safety.check_relpath(o.relpath)
    except QConsoleError:
        return f"its name holds no plain message path ({o.relpath!r})"
    in_work = (o.relpath or "").startswith("work/")
    if in_work != (os.path.basename(d) == "work"):
        return f"it is not in the directory its path {o.relpath!r} says"
    if not is_message((o.relpath or "").rpartition("/")[2]):
        return f"{o.relpath!r} is not a message name"
    return None
