"""The trash: ``<root>/.qconsole/trash/<batch>/`` on the root's file system, so every delete
is one rename and every restore one rename that never replaces (``renameat2``; a link and an
unlink where there is none). Files keep their queue-relative path under
``files/<queue>/``, so a batch is restorable even when the manifest was never completed.

Everything here is untrusted input (anyone who can write the root can plant a batch), so:

* only directories named like a batch (``YYYYmmddTHHMMSS-xxxxxx``) are batches; links, files
  and other names in the trash are left alone; inside a batch only regular files are
  restored, and no link is ever followed (:mod:`.safety`);
* a batch is filled under a hidden name (``.fill-<host>-<pid>-<batch>``) and renamed to its
  batch name only when complete, so a restore never sees a batch another process is still
  filling; an empty one is removed by the purge that made it;
* restore and empty hold a per-batch lock file (``O_EXCL``, which NFS honours), and restore
  removes only what it restored (directories only when empty);
* a trashed file comes back only when no file of its id is live in the queue in any state,
  and a file with other hard links only when that link is its own restored copy (a restore
  killed between its link and its unlink).
"""

from __future__ import annotations

import calendar
import json
import math
import os
import re
import secrets
import stat as _stat
import time
from collections.abc import Callable
from time import strptime as _strptime
from typing import Any

from ...errors import OperationError, QConsoleError
from ...model import STATE_DIR
from ..results import TrashBatch
from . import safety
from .claims import (CFG, HOST, FOREIGN_HOST_GRACE, PID_REUSE_SLACK, holder_here_alive, lock_line, unwritten, new_token,
                     owned_name, pid_alive, started_after)

MANIFEST = "manifest.json"
FILES = "files"
LOCK = ".lock"
FILL = ".fill-"
BATCH_RE = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{6}")
_FILL_RE = re.compile(r"\.fill-([0-9a-f]{6})-([0-9]{1,10})-([0-9]{8}T[0-9]{6}-[0-9a-f]{6})")


def trash_dir(root: str) -> str:
    return os.path.join(root, STATE_DIR, "trash")


def batch_dir(root: str, batch: str) -> str:
    return os.path.join(trash_dir(root), batch)


class Filling:
    """A batch being filled by this process (under its hidden name until :meth:`finish`)."""

    def __init__(self, c: safety.Confined, action: str, queue: str, layout: str, user: str) -> None:
        self.c = c
        now = time.time()
        self.batch = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + "-" + secrets.token_hex(3)
        self.dir = os.path.join(trash_dir(c.root), f"{FILL}{HOST}-{os.getpid()}-{self.batch}")
        self.queue = queue
        self.doc = {"batch": self.batch, "created_at": now, "action": action, "queue": queue, "layout": layout,
                    "user": user, "complete": False, "items": []}
        try:
            c.makedirs(trash_dir(c.root))
            c.mkdir(self.dir)
            for sub in (FILES, f"{FILES}/{queue}", f"{FILES}/{queue}/work"):
                c.mkdir(os.path.join(self.dir, sub))
        except (OSError, QConsoleError) as err:
            why = err.strerror if isinstance(err, OSError) else str(err)
            raise OperationError(f"cannot create the trash in {trash_dir(c.root)}: {why} "
                                 "(use --no-trash to delete for real)") from None

    def path(self, relpath: str) -> str:
        return os.path.join(self.dir, FILES, self.queue, relpath)

    def reconciled(self, items: list[dict[str, Any]], ids: dict[str, str]) -> list[dict[str, Any]]:
        """``items`` and an item for every file the batch holds that none of them names, from
        the batch's own listing (``ids``: relpath -> id of the messages being moved). For a
        move stopped by ctrl+c: a signal that arrives during a rename is raised when it
        returns, before the rename is recorded."""
        named = {item["relpath"] for item in items}
        out = list(items)
        top = os.path.join(self.dir, FILES, self.queue)
        for sub in ("", "work"):
            try:
                entries = self.c.entries(os.path.join(top, sub) if sub else top)
            except (OSError, QConsoleError):
                continue
            for name, kind in entries:
                rel = f"{sub}/{name}" if sub else name
                if kind == "file" and rel not in named:
                    out.append({"queue": self.queue, "relpath": rel, "id": ids.get(rel)})
        return out

    def finish(self, items: list[dict[str, Any]]) -> str | None:
        """Write the manifest and publish the batch under its name; None (and nothing left
        behind) when nothing went into it."""
        if not items:
            # only empty directories go: a file no item names (a move interrupted between its
            # rename and its record) keeps the batch, to be restored like any other
            files = os.path.join(self.dir, FILES)
            if all(map(self.c.rmdir, (os.path.join(files, self.queue, "work"), os.path.join(files, self.queue),
                                      files, self.dir))):
                return None
        self.doc.update(complete=True, items=items)
        # compact: an indent makes json use its pure-Python encoder (1 s per 50k items)
        data = json.dumps(self.doc, separators=(",", ":")).encode()
        self.c.replace_file(os.path.join(self.dir, MANIFEST), data, owned_name(CFG, new_token()))
        self.c.rename(self.dir, batch_dir(self.c.root, self.batch))
        return self.batch


#: what a reader takes of a manifest: its head. Every reader wants the fields before
#: ``items`` (written first); the items (one per message: 100 MB for a purge of 1M) are
#: the record for a person, and a planted 64 MB list of ``{}`` took 1.7 GB to parse.
MANIFEST_HEAD = 64 << 10
_ITEMS_AT = re.compile(rb',\s*"items"\s*:')


def read_manifest(c: safety.Confined, batch: str) -> dict[str, Any]:
    """The manifest's fields but its items, as a dict; {} when missing, not a regular file or
    not JSON (a head that does not parse as the start of one)."""
    try:
        head = c.read(os.path.join(batch_dir(c.root, batch), MANIFEST), MANIFEST_HEAD + 1)
        if len(head) > MANIFEST_HEAD:
            at = _ITEMS_AT.search(head)
            if at is None:
                return {}
            head = head[:at.start()] + b"}"
        doc = json.loads(head)
    except (OSError, ValueError, QConsoleError, RecursionError):
        return {}
    if isinstance(doc, dict):
        doc.pop("items", None)
        return doc
    return {}


def _named_time(batch: str) -> float:
    return float(calendar.timegm(_strptime(batch[:15], "%Y%m%dT%H%M%S")))


def created_at(batch: str, doc: dict[str, Any]) -> float:
    """When the batch was made: the manifest's time when it is a plausible number (within a
    day of the time in the batch's name), else the name's."""
    named = _named_time(batch)
    value = doc.get("created_at")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and abs(value - named) <= 86400:
        return float(value)
    return named


def _files(c: safety.Confined, batch: str, ordered: bool = True) -> list[tuple[str, str]]:
    """(queue, relpath) of every regular file in a batch (links and specials are not files)."""
    out: list[tuple[str, str]] = []
    top = os.path.join(batch_dir(c.root, batch), FILES)
    try:
        queues = sorted(n for n, kind in c.entries(top) if kind == "dir")
    except (OSError, QConsoleError):
        return out
    for q in queues:
        for sub in ("", "work"):
            d = os.path.join(top, q, sub) if sub else os.path.join(top, q)
            try:
                entries = sorted(c.entries(d)) if ordered else c.entries(d)
            except (OSError, QConsoleError):
                continue
            for n, kind in entries:
                if kind == "file":
                    out.append((q, f"{sub}/{n}" if sub else n))
    return out


def batch_names(c: safety.Confined) -> list[str]:
    """The batches: real directories named like one (anything else in the trash is left alone)."""
    try:
        entries = c.entries(trash_dir(c.root))
    except FileNotFoundError:
        return []
    except (OSError, QConsoleError):
        return []
    return sorted(n for n, kind in entries if kind == "dir" and _is_batch_name(n))


def _is_batch_name(name: str) -> bool:
    """Named as a purge names its batch: the pattern, and a time that is one (a planted
    ``20261399T256199-abcdef`` made every reader of the batches' times fail)."""
    if not BATCH_RE.fullmatch(name):
        return False
    try:
        _named_time(name)
    except (ValueError, OverflowError):
        return False
    return True


def _queue_of(doc: dict[str, Any], files: list[tuple[str, str]]) -> str | None:
    """The queue a batch's files go back to: the one ``files/<queue>/`` directory that holds
    them (what a restore goes by), never the manifest's word for it, which anyone who can write
    the root can change (a restore into ``a`` was reported and audited as one into ``b``). None
    when the files lie under several queues; the manifest's queue only for a batch with no files."""
    queues = {q for q, _rel in files}
    if len(queues) > 1:
        return None
    queue = next(iter(queues)) if queues else doc.get("queue")
    return queue if isinstance(queue, str) and 0 < len(queue) < 256 else None


def batch_queue(root: str, batch: str) -> str | None:
    with safety.Confined(root) as c:
        return _queue_of(read_manifest(c, batch), _files(c, batch, ordered=False))


def list_batches(root: str) -> list[TrashBatch]:
    out = []
    with safety.Confined(root) as c:
        for b in batch_names(c):
            doc = read_manifest(c, b)
            files = _files(c, b)
            out.append(TrashBatch(b, created_at(b, doc), str(doc.get("action", "?"))[:40], _queue_of(doc, files),
                                  len(files), str(doc.get("user", ""))[:64], [r for _q, r in files]))
    return out


# --------------------------------------------------------------------------- locking


def _lock(c: safety.Confined, batch: str, what: str) -> str:
    """Take the batch's lock (an exclusive create, which NFS honours); OperationError when
    another live qconsole holds it. A lock whose owner is gone is broken."""
    path = os.path.join(batch_dir(c.root, batch), LOCK)
    for _attempt in range(2):
        try:
            fd = c.create_exclusive(path)
        except FileNotFoundError:
            raise OperationError(f"no trash batch {batch!r} (restored or emptied meanwhile)") from None
        except FileExistsError:
            if _lock_alive(c, path):
                raise OperationError(f"trash batch {batch} is being restored or emptied by another qconsole; "
                                     "try again when it is done") from None
            try:
                c.unlink(path)  # its owner died, or it is no lock at all: break it (a link itself)
            except OSError as err:  # a planted directory
                raise OperationError(f"trash batch {batch}: its {LOCK} is no lock qconsole wrote and cannot be "
                                     f"removed ({err.strerror}); remove it by hand") from None
            continue
        try:
            safety.write_all(fd, lock_line(what))
        finally:
            os.close(fd)
        return path
    raise OperationError(f"trash batch {batch}: could not take its lock")


def _lock_alive(c: safety.Confined, path: str) -> bool:
    try:
        st = c.lstat(path)
        if st is None:
            return False
        if not _stat.S_ISREG(st.st_mode):  # a link, a FIFO, a directory: none qconsole writes, no one holds it
            return False
        text = c.read(path, max_size=4096).decode("ascii", "replace").split()
    except (OSError, QConsoleError):
        return True
    here = holder_here_alive(text)
    if here is not None:
        return here
    return _fresh(st, time.time()) and not unwritten(text, st, time.time())  # another host's: alive while fresh


def _fresh(st: os.stat_result | None, now: float) -> bool:
    """Changed within the grace another host's leftovers get. By ctime, which no one can set
    (touch sets mtime: a lock planted with a time in 2099 held its batch for good); either
    way of the clock, for a host whose clock runs a little ahead."""
    return st is not None and abs(now - st.st_ctime) < FOREIGN_HOST_GRACE


# --------------------------------------------------------------------------- restore / empty


def restore(root: str, batch: str, ready_target: Callable[[str], tuple[str, str] | None],
            msg_id: Callable[[str], str | None], is_queue: Callable[[str], bool],
            tick: Callable[[int, int], None] | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """Move a batch back: (restored queue/names, [(relpath, reason)]).

    ``ready_target``: the layout's (ready name, id) for a trashed relpath (None: not a message);
    ``msg_id``: the id a queue file name carries (None: not a message); ``is_queue``: whether
    a queue directory is one of this layout; ``tick(done, total)``: progress.
    """
    done: list[str] = []
    skipped: list[tuple[str, str]] = []
    with safety.Confined(root) as c:
        if batch not in batch_names(c):
            raise OperationError(f"no trash batch {batch!r} (see qconsole trash list)")
        lock = _lock(c, batch, "restore")
        try:
            files = _files(c, batch, ordered=False)  # the order of a restore does not matter
            # one directory of the batch at a time: the queue checked and listed, both
            # directories opened once (not per message)
            groups: dict[tuple[str, str], list[str]] = {}
            for queue, rel in files:
                sub, _, name = rel.rpartition("/")
                groups.setdefault((queue, sub), []).append(name)
            live: dict[str, dict[str, list[str]]] = {}
            for (queue, sub), names in groups.items():
                why = _queue_problem(c, root, queue, is_queue)
                if why:
                    skipped.extend((f"{sub}/{n}" if sub else n, why) for n in names)
                    continue
                qdir = os.path.join(root, queue)
                ids = live.get(queue)
                if ids is None:
                    ids = live[queue] = _live_ids(c, qdir, msg_id)
                top = os.path.join(batch_dir(root, batch), FILES, queue)
                pair = c.pair(os.path.join(top, sub) if sub else top, qdir)
                _restore_group(c, pair, qdir, queue, sub, names, ready_target, ids, done, skipped,
                               lambda k: tick(k, len(files)) if tick is not None else None)
            _tidy(c, batch)
        finally:
            c.unlink(lock)
            _drop_if_empty(c, batch)
    return done, skipped


def _queue_problem(c: safety.Confined, root: str, queue: str, is_queue: Callable[[str], bool]) -> str | None:
    try:
        safety.validate_queue_name(queue)
    except QConsoleError:
        return f"queue {queue!r} is not a queue name"
    qdir = os.path.join(root, queue)
    if not c.is_dir(qdir) or not is_queue(qdir):
        return f"queue {queue!r} is gone"
    return None


def _restore_group(c: safety.Confined, pair: safety.DirPair, qdir: str, queue: str, sub: str, names: list[str],
                   ready_target: Callable[[str], tuple[str, str] | None], ids: dict[str, list[str]],
                   done: list[str], skipped: list[tuple[str, str]], tick: Callable[[int], None]) -> None:
    """Restore one directory of a batch. A plain file with one link whose id is not live (and
    not restored by this batch already) goes back in one no-replace batch of renames; the
    others, and any the batch did not move, one by one (:func:`_restore_one`)."""
    start = len(done) + len(skipped)  # progress counts names handled, of the whole restore
    tick = safety.rising(tick)
    rels = [f"{sub}/{name}" for name in names] if sub else names
    targets = list(map(ready_target, rels))
    for rel, tm in zip(rels, targets):
        if tm is None:
            skipped.append((rel, "not a message name"))
    cands = [(name, rel, tm) for name, rel, tm in zip(names, rels, targets) if tm is not None]
    fast: list[tuple[str, str, str, str]] = []  # name, rel, ready name, id
    slow: list[tuple[str, str]] = []  # name, rel
    seen: set[str] = set()
    for (name, rel, (target, mid)), st in zip(cands, pair.lstats([n for n, _r, _t in cands])):
        if st is not None and st.st_nlink == 1 and _stat.S_ISREG(st.st_mode) and not ids.get(mid) \
                and mid not in seen:
            seen.add(mid)
            fast.append((name, rel, target, mid))
        else:
            slow.append((name, rel))
    prior = len(done) + len(skipped)
    errs = pair.renames_noreplace([f[0] for f in fast], [f[2] for f in fast], lambda k: tick(prior + k))
    for (name, rel, target, mid), err in zip(fast, errs):
        if err:
            slow.append((name, rel))
        else:
            ids[mid] = [target]
            done.append(f"{queue}/{target}")
    for name, rel in slow:
        tick(len(done) + len(skipped))
        reason = _restore_one(c, pair, qdir, queue, rel, name, ready_target, ids, done)
        if reason:
            skipped.append((rel, reason))
    tick(start + len(names))


def _restore_one(c: safety.Confined, pair: safety.DirPair, qdir: str, queue: str, rel: str, name: str,
                 ready_target: Callable[[str], tuple[str, str] | None],
                 ids: dict[str, list[str]], done: list[str]) -> str | None:
    tm = ready_target(rel)
    if tm is None:
        return "not a message name"
    target, mid = tm
    st = pair.lstat(name)
    if st is None:
        return "gone (restored or emptied meanwhile)"
    if not _stat.S_ISREG(st.st_mode):  # swapped for a link or a FIFO since the batch was listed
        return "not a regular file; not restored"
    twins = ids.get(mid)
    if twins:
        for twin in twins:  # a restore killed after its link: that copy is the message, drop ours
            tw = c.lstat(os.path.join(qdir, twin))
            if tw is not None and (tw.st_ino, tw.st_dev) == (st.st_ino, st.st_dev):
                pair.unlink(name)
                done.append(f"{queue}/{twin}")
                return None
        return f"id {mid} is in the queue already ({twins[0]})"
    if st.st_nlink > 1:
        return "has other hard links; not restored"
    if pair.move_noclobber(name, target):
        ids.setdefault(mid, []).append(target)
        done.append(f"{queue}/{target}")
        return None
    return "a file of that name exists" if pair.lstat(name) is not None else "gone (restored or emptied meanwhile)"


def _live_ids(c: safety.Confined, qdir: str, msg_id: Callable[[str], str | None]) -> dict[str, list[str]]:
    """id -> the queue's file names carrying it, in every state (ready, held, being written)."""
    out: dict[str, list[str]] = {}
    for sub in ("", "work"):
        d = os.path.join(qdir, sub) if sub else qdir
        try:
            names = c.listdir(d)
        except (OSError, QConsoleError):
            continue
        for n in names:
            mid = msg_id(n)
            if mid is not None:
                out.setdefault(mid, []).append(f"{sub}/{n}" if sub else n)
    return out


def _tidy(c: safety.Confined, batch: str) -> None:
    """Remove the batch's directories that are now empty (what this restore emptied)."""
    top = os.path.join(batch_dir(c.root, batch), FILES)
    try:
        queues = [n for n, kind in c.entries(top) if kind == "dir"]
    except (OSError, QConsoleError):
        return
    for q in queues:
        c.rmdir(os.path.join(top, q, "work"))
        c.rmdir(os.path.join(top, q))
    c.rmdir(top)


def _drop_if_empty(c: safety.Confined, batch: str) -> None:
    """A batch whose files are all restored: its manifest and directory go (nothing else)."""
    bdir = batch_dir(c.root, batch)
    try:
        rest = {n for n, _kind in c.entries(bdir)}
    except (OSError, QConsoleError):
        return
    if FILES in rest or LOCK in rest or not rest <= {MANIFEST}:
        return
    c.unlink(os.path.join(bdir, MANIFEST))
    c.rmdir(bdir)


def empty(root: str, older_than_s: float | None,
          tick: Callable[[int, int], None] | None = None) -> list[tuple[str, str | None]]:
    """Delete batches for good (only those older than ``older_than_s`` when given): (batch,
    None when deleted, else why not) each. A batch another qconsole is restoring, or one that
    cannot be removed (planted too deep, a permission), is left and said, and the rest go.
    ``tick(done, total)``: files removed."""
    now = time.time()
    removed: list[tuple[str, str | None]] = []
    with safety.Confined(root) as c:
        chosen = [b for b in batch_names(c)
                  if older_than_s is None or now - created_at(b, read_manifest(c, b)) >= older_than_s]
        total = sum(len(_files(c, b)) for b in chosen) if tick is not None else 0
        count = [0]

        def one_removed() -> None:
            count[0] += 1
            if tick is not None:
                tick(count[0], total)

        for b in chosen:
            try:
                lock = _lock(c, b, "empty")
            except OperationError as err:  # being restored right now: not ours to delete under it
                removed.append((b, str(err)))
                continue
            try:
                c.rmtree(batch_dir(root, b), one_removed)
            except (OSError, QConsoleError) as err:
                why = err.strerror if isinstance(err, OSError) else str(err)
                removed.append((b, f"not removed: {why}"))
                try:
                    c.unlink(lock)  # what is left of it stays restorable
                except (OSError, QConsoleError):
                    pass
                continue
            removed.append((b, None))
    return removed


def require_batch(root: str, batch: str | None) -> str:
    """The batch named (or the newest): names and manifests only, no batch's files listed
    (listing every batch's 100k files twice was a third of a restore)."""
    with safety.Confined(root) as c:
        names = batch_names(c)
        if not names:
            raise OperationError("the trash is empty" + fills_note(root))
        if batch is None:
            return max(names, key=lambda b: (created_at(b, read_manifest(c, b)), b))
    if not isinstance(batch, str) or not BATCH_RE.fullmatch(batch) or batch not in names:
        raise OperationError(f"no trash batch {batch!r} (see qconsole trash list)")
    return batch


def fills_note(root: str) -> str:
    """What the trash holds under hidden fill names, for a line that would say it is empty: a
    purge killed (kill -9) half-way leaves its messages there, and "the trash is empty" alone
    hid them from the operator, who had no word that `recover` publishes them."""
    try:
        every, dead = orphaned_fills(root, force=True), orphaned_fills(root)
    except (OSError, QConsoleError):
        return ""
    notes = []
    if dead:
        notes.append(f"{len(dead)} batch(es) a killed delete or purge left half-filled: "
                     "`qconsole recover` makes them restorable")
    if len(every) > len(dead):
        notes.append(f"{len(every) - len(dead)} being filled by a delete or purge still running")
    return f" (but for {'; '.join(notes)})" if notes else ""


def orphaned_fills(root: str, *, force: bool = False) -> list[tuple[str, str]]:
    """(hidden dir name, batch) of batches whose purge died while filling them."""
    out = []
    with safety.Confined(root) as c:
        try:
            entries = c.entries(trash_dir(root))
        except (OSError, QConsoleError):
            return out
        for n, kind in entries:
            m = _FILL_RE.fullmatch(n)
            if kind != "dir" or not m:
                continue
            host, pid, batch = m.group(1), int(m.group(2)), m.group(3)
            if not force:
                # a live pid is the purge only if it ran when the batch was made: a killed
                # purge's pid reused by another process hid its batch from recover for as long
                # as that process ran (recover said "0 problems"; slack: clock steps)
                if host == HOST and pid_alive(pid) and not _reused(pid, batch):
                    continue
                if host != HOST and _fill_touched_lately(c, os.path.join(trash_dir(root), n)):
                    continue
            out.append((n, batch))
    return out


def _reused(pid: int, batch: str) -> bool:
    try:
        made = _named_time(batch)
    except (ValueError, OverflowError):  # a planted name (month 13): judged by the pid alone
        return False
    return started_after(pid, made + PID_REUSE_SLACK)


def _fill_touched_lately(c: safety.Confined, fill: str) -> bool:
    """Whether a batch being filled changed lately (:func:`_fresh`): each message moved in
    changes its queue's directory (files/QUEUE or its work/), not the batch's top, whose ctime
    is its creation (another host's purge past 5 minutes was taken for dead and published)."""
    now = time.time()
    files = os.path.join(fill, FILES)
    try:
        queues = [n for n, kind in c.entries(files) if kind == "dir"][:16]
    except (OSError, QConsoleError):
        queues = []
    dirs = [fill, files] + [p for q in queues for p in (os.path.join(files, q), os.path.join(files, q, "work"))]
    return any(_fresh(c.lstat(d), now) for d in dirs)


def publish_orphan(root: str, hidden: str, batch: str) -> bool:
    """Give a dead purge's batch its name, so it can be listed and restored."""
    with safety.Confined(root) as c:
        dst = batch_dir(root, batch)
        if c.lexists(dst):
            return False
        return c.rename(os.path.join(trash_dir(root), hidden), dst)
