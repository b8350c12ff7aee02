"""Claims: how qconsole holds a message while it rewrites or moves it, and how a killed
qconsole's leftovers are put back (``qconsole recover``).

A claim is the message file renamed, in its own directory, to
``.qconsole-claim-<host>-<pid>-<token>-<relpath>`` (``/`` -> ``+``, ``.`` -> ``,``, so the name
never contains ``.ddmq`` and no client lists it). While claimed, no consumer can take it.

Moving it somewhere (ddmq requeue, move) goes:

1. claim (rename; ENOENT = a consumer got there first);
2. write the new file to ``.qconsole-tmp-<host>-<pid>-<token>`` in the destination, fsync;
   for VSQS also hard-link it to ``<id>.new`` (an exclusive create, then the clash check);
3. write a journal ``.qconsole-journal-...-<token>`` beside the claim naming the commit rename;
4. commit: rename the tmp (ddmq) or ``<id>.new`` (VSQS) to its final name;
5. remove the tmp link, the claim, the journal.

After a SIGKILL at any point, :func:`recover` decides from what is left: no journal, or the
journal's commit source still there -> not committed: drop the new copy, put the claim back;
commit source gone -> committed: drop the claim. Every message ends in exactly one place.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .listing import QC_TEMP_PREFIX
from .atomic import dir_gid, link_noclobber, read_all, rename_checked, unlink_quiet, write_new

CLAIM, TMP, JOURNAL, CFG = "claim", "tmp", "journal", "cfg"
#: a claim taken only after its new copy was fully written (the ddmq requeue, see
#: :func:`commit_written`): committed exactly when no copy of its token is left
CLAIM_AFTER = "claimw"
KINDS = (CLAIM, TMP, JOURNAL, CFG, CLAIM_AFTER)
HOST = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:6]
#: another host's leftovers are only recovered when they are at least this old (seconds)
FOREIGN_HOST_GRACE = 300.0


def new_token() -> str:
    return secrets.token_hex(4)


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
    if not name.startswith(QC_TEMP_PREFIX):
        return None
    parts = name[len(QC_TEMP_PREFIX):].split("-", 4)
    if len(parts) < 4 or parts[0] not in KINDS or not parts[2].isdigit():
        return None
    rel = decode_rel(parts[4]) if len(parts) == 5 else None
    return Owned(parts[0], parts[1], int(parts[2]), parts[3], rel)


def owner_alive(owned: Owned, path: str, now: float | None = None) -> bool:
    """True when the qconsole that left ``path`` may still be working on it."""
    if owned.host == HOST:
        if owned.pid == os.getpid():
            return False
        try:
            os.kill(owned.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:  # another host: a rename updates ctime, so a fresh leftover may be live
        age = (time.time() if now is None else now) - os.lstat(path).st_ctime
    except FileNotFoundError:
        return False
    return age < FOREIGN_HOST_GRACE


# --------------------------------------------------------------------------- the transfer


@dataclass
class Placement:
    """A new copy prepared in ``dest_dir``: ``commit_from`` renamed to ``final`` makes it live."""

    dest_dir: str
    commit_from: str
    final: str
    tmp: str | None = None


class Claim:
    """One message held by this process."""

    def __init__(self, queue_dir: str, relpath: str, token: str | None = None, kind: str = CLAIM) -> None:
        self.queue_dir = queue_dir
        self.relpath = relpath
        self.token = token or new_token()
        sub, _, name = relpath.rpartition("/")
        self.dir = os.path.join(queue_dir, sub) if sub else queue_dir
        self.src = os.path.join(queue_dir, relpath)
        self.path = os.path.join(self.dir, owned_name(kind, self.token, relpath))
        self.journal = os.path.join(self.dir, owned_name(JOURNAL, self.token))

    def acquire(self) -> bool:
        """Take the message; False when it is gone (consumed, acked or moved meanwhile)."""
        return rename_checked(self.src, self.path)

    def read(self) -> bytes:
        return read_all(self.path)

    def restore(self) -> bool:
        """Put the message back where it was (never over another file)."""
        return link_noclobber(self.path, self.src)

    def release(self) -> None:
        unlink_quiet(self.path)
        unlink_quiet(self.journal)

    def write_journal(self, dest_queue: str, placement: Placement) -> None:
        doc = {
            "token": self.token, "src": self.relpath, "dest": dest_queue,
            "commit_from": placement.commit_from, "final": placement.final, "tmp": placement.tmp,
        }
        # written whole before the commit; a torn journal means "not committed" to recover()
        write_new(self.journal, json.dumps(doc).encode(), sync=False)


def transfer(
    claim: Claim,
    dest_queue: str,
    dest_dir: str,
    prepare: Callable[[bytes, str], Placement],
    data: bytes,
) -> None:
    """Steps 2-5 for a claimed message: prepare, journal, commit, clean up.

    On any error before the commit the new copy is removed and the claim put back, then
    the error propagates; the message is never lost.
    """
    placement: Placement | None = None
    try:
        placement = prepare(data, claim.token)
        claim.write_journal(dest_queue, placement)
    except BaseException:
        if placement is not None:
            _drop_placement(placement)
        else:
            unlink_quiet(os.path.join(dest_dir, owned_name(TMP, claim.token)))
        unlink_quiet(claim.journal)
        claim.restore()
        raise
    src = os.path.join(placement.dest_dir, placement.commit_from)
    dst = os.path.join(placement.dest_dir, placement.final)
    if not rename_checked(src, dst):  # only we know the tmp/.new name: it cannot vanish
        raise OSError(errno.ENOENT, "commit rename lost its source", src)
    if placement.tmp and placement.tmp != placement.commit_from:
        unlink_quiet(os.path.join(placement.dest_dir, placement.tmp))
    claim.release()


def _drop_placement(p: Placement) -> None:
    unlink_quiet(os.path.join(p.dest_dir, p.commit_from))
    if p.tmp:
        unlink_quiet(os.path.join(p.dest_dir, p.tmp))


def write_tmp(dest_dir: str, data: bytes, token: str, gid: int | None = None, *, sync: bool = True) -> str:
    """The new copy under a name no client lists (step 2); returns its base name.

    ``gid``: the destination's group when the caller already has it (one stat per operation,
    not per message); ``sync=False`` leaves the fsync to :func:`commit_written`'s barrier.
    """
    name = owned_name(TMP, token)
    write_new(os.path.join(dest_dir, name), data, dir_gid(dest_dir) if gid is None else gid, sync=sync)
    return name


# --------------------------------------------------------------------------- transfers in batches

#: fsyncs in flight at once in :func:`sync_files`
SYNC_THREADS = 16


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_files(paths: list[str]) -> None:
    """fsync every file, several at once: concurrent fsyncs share the file system's journal
    commits (one commit per file is what makes a per-message fsync the cost of a requeue)."""
    if len(paths) < 2:
        for path in paths:
            _fsync_path(path)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(SYNC_THREADS, len(paths))) as pool:
        list(pool.map(_fsync_path, paths))  # list(): re-raises the first error


def commit_written(queue_dir: str, entries: list[tuple[str, str, str, str]]) -> list[tuple[str, bool]]:
    """Commit copies written (unsynced) beside their messages, copy first, claim second.

    ``entries``: (message id, the message's relpath, the copy's tmp name, its final name).
    One durability barrier for the batch (:func:`sync_files`), then per message: claim it
    (kind CLAIM_AFTER, same token as its tmp), rename the copy live, drop the claim. No journal
    file: a CLAIM_AFTER claim exists only while its copy is complete, so :func:`recover`
    reads "claim and copy left" as not committed (copy dropped, message put back) and "claim
    alone" as committed. Three namespace changes and one new file per message, where the
    journalled transfer makes five and two. Returns (id, committed); False: the message was
    gone before the claim (consumed) and its copy was dropped. On an error, the message in
    hand is put back and every copy not committed is removed, then the error propagates.
    """
    out: list[tuple[str, bool]] = []
    i = 0
    claim: Claim | None = None
    try:
        sync_files([os.path.join(queue_dir, tmp) for _m, _r, tmp, _f in entries])
        for i, (mid, relpath, tmp, final) in enumerate(entries):
            token = parse_owned(tmp).token  # type: ignore[union-attr]
            claim = Claim(queue_dir, relpath, token, kind=CLAIM_AFTER)
            if not claim.acquire():
                claim = None
                unlink_quiet(os.path.join(queue_dir, tmp))
                out.append((mid, False))
                continue
            if not rename_checked(os.path.join(queue_dir, tmp), os.path.join(queue_dir, final)):
                claim.restore()  # our copy vanished before its commit: the message stays where it was
                claim = None
                raise OSError(errno.ENOENT, "commit rename lost its source", os.path.join(queue_dir, tmp))
            committed, claim = claim, None  # from here on an error leaves it to recover: committed
            committed.release()
            out.append((mid, True))
    except BaseException:
        if claim is not None:  # claimed, not committed (the copy is still there): put it back
            claim.restore()
        for _m, _r, tmp, _f in entries[i:] if entries else ():
            unlink_quiet(os.path.join(queue_dir, tmp))  # (a committed copy has no tmp name left)
        raise
    return out


# --------------------------------------------------------------------------- recovery


@dataclass
class RecoverReport:
    restored: list[str] = field(default_factory=list)  # claims put back where they were
    completed: list[str] = field(default_factory=list)  # committed moves whose claim was dropped
    removed_temp: list[str] = field(default_factory=list)  # uncommitted copies and temp files
    live: list[str] = field(default_factory=list)  # leftovers of a qconsole still running
    problems: list[str] = field(default_factory=list)


def _scan_dirs(queue_dirs: list[str]) -> dict[str, list[tuple[str, str, Owned]]]:
    """token -> [(dir, name, owned)] over every queue directory and its work/."""
    found: dict[str, list[tuple[str, str, Owned]]] = {}
    for qdir in queue_dirs:
        for d in (qdir, os.path.join(qdir, "work")):
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for name in names:
                owned = parse_owned(name)
                if owned is not None:
                    found.setdefault(owned.token, []).append((d, name, owned))
    return found


def _load_journal(path: str) -> dict | None:
    try:
        doc = json.loads(read_all(path))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _unlink_new_twin(tmp_path: str) -> str | None:
    """A tmp linked to ``<id>.new`` whose journal never got written: remove that ``.new``."""
    try:
        st = os.lstat(tmp_path)
    except FileNotFoundError:
        return None
    if st.st_nlink < 2:
        return None
    d = os.path.dirname(tmp_path)
    for name in os.listdir(d):
        if name.endswith(".new"):
            p = os.path.join(d, name)
            try:
                other = os.lstat(p)
            except FileNotFoundError:
                continue
            if other.st_ino == st.st_ino and other.st_dev == st.st_dev:
                unlink_quiet(p)
                return name
    return None


def recover(root_path: str, queue_dirs: list[str], *, force: bool = False) -> RecoverReport:
    """Finish or undo what killed qconsole processes left in these queue directories."""
    report = RecoverReport()
    now = time.time()
    for token, items in sorted(_scan_dirs(queue_dirs).items()):
        if not force and any(owner_alive(o, os.path.join(d, n), now) for d, n, o in items):
            report.live.extend(os.path.relpath(os.path.join(d, n), root_path) for d, n, _o in items)
            continue
        claims = [(d, n, o) for d, n, o in items if o.kind in (CLAIM, CLAIM_AFTER)]
        journals = [(d, n, o) for d, n, o in items if o.kind == JOURNAL]
        tmps = [(d, n, o) for d, n, o in items if o.kind in (TMP, CFG)]
        doc = _load_journal(os.path.join(journals[0][0], journals[0][1])) if journals else None
        committed = False
        if doc is None and any(o.kind == CLAIM_AFTER for _d, _n, o in claims):
            # the copy was complete before the claim was taken: gone means renamed live
            committed = not tmps
        elif doc is not None:
            dest_dir = os.path.join(root_path, str(doc.get("dest", "")))
            committed = not os.path.lexists(os.path.join(dest_dir, str(doc.get("commit_from", ""))))
            if not committed:
                # uncommitted: the prepared copy goes (a .new twin of a tmp included)
                unlink_quiet(os.path.join(dest_dir, str(doc["commit_from"])))
        for d, n, _o in tmps:
            p = os.path.join(d, n)
            if not committed and claims:
                twin = _unlink_new_twin(p)
                if twin:
                    report.removed_temp.append(os.path.relpath(os.path.join(d, twin), root_path))
            if unlink_quiet(p):
                report.removed_temp.append(os.path.relpath(p, root_path))
        for d, n, o in claims:
            p = os.path.join(d, n)
            rel = os.path.relpath(p, root_path)
            if committed:
                unlink_quiet(p)
                report.completed.append(rel)
                continue
            qdir = d[: -len("/work")] if d.endswith("/work") and (o.relpath or "").startswith("work/") else d
            dest = os.path.join(qdir, o.relpath or "")
            if o.relpath and link_noclobber(p, dest):
                report.restored.append(os.path.relpath(dest, root_path))
            else:
                report.problems.append(f"{rel}: could not put back as {o.relpath!r}; left in place")
        for d, n, _o in journals:
            unlink_quiet(os.path.join(d, n))
    return report
