"""Transfers in batches: many claimed messages committed under ONE journal.

The per-message protocol (:func:`.claims.recover` still reads its journals) wrote and removed a
journal file for every message: two directory changes per message that no client pays. Here
a batch shares one journal, ``.qconsole-batch-<host>-<pid>-<token>``, in the source queue's
directory:

1. each message is claimed (:class:`.claims.Claim`) and its new copy written to a tmp named
   with the claim's token (VSQS: also linked to an exclusive ``<id>.new``), left open;
2. barrier: the batch's copies made durable at once (:class:`.durable.Barrier`: one syncfs of
   their file system; fsyncs trickling in as each copy was written forced a commit each and
   stalled the writer: 1.5-2x slower); a ``check`` hook
   may re-place copies (VSQS: one listing of the destination is the clash check of every
   ``<id>.new`` of the batch);
3. the journal, naming every entry's claim token, source, commit rename and tmp, is written
   to a tmp of the batch's own token, fsynced, renamed to its name, its directory fsynced:
   a journal under its name is always whole (a torn one is planted, never ours);
4. per chunk of entries: commit renames, their directory fsynced, then per entry the claim
   dropped and the tmp when it is a second link of the copy (VSQS) -- while the claim is
   there, so is that link: the proof of the commit (ctrl+c held for the batch's commit: it
   stops the writer after it);
5. the journal goes.

A batch's barrier runs while this thread commits the batch before it and prepares the next
(:class:`BatchWriter`), so at most two batches are claimed at once.

:func:`recover_batches`, per entry of a dead process's journal: no claim -> committed and
cleaned (a leftover tmp link goes); commit source still there -> not committed: the copy
goes, the claim is put back; commit source gone and the copy live -> committed: the claim
goes ("live": ddmq, the final name carries the claimed message's id; VSQS, the tmp still
links a live name of the final id). Anything else is reported and left alone. Killed before step 3: no journal, so :func:`.claims.recover`'s per-token rules
apply (nothing was committed). A journal that does not validate is reported in one line and
left alone, with everything else its process left (without its entries nothing can be judged).
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ...errors import QConsoleError
from . import safety
from .durable import Barrier
from .interrupts import CtrlCHeld
from .claims import (BATCH, CLAIM, TMP, Claim, Owned, Placement, RecoverReport, new_token, owned_name,
                     owner_alive, parse_owned, _claim_problem, _is_reg)

#: messages per batch (one journal each); bounded so a journal stays well below its cap
BATCH_SIZE = 256
#: commit renames fsynced together before their claims are dropped: an entry renamed whose
#: claim is still there is one a kill leaves for recover to judge, and one whose copy a
#: consumer takes meanwhile it cannot settle (left alone, reported): at most this many
COMMIT_CHUNK = 32
SCHEMA = "qconsole.batch/1"
MAX_BATCH_JOURNAL_BYTES = 1 << 20
MAX_ENTRIES = 4096


def _close(e: Entry) -> None:
    fd, e.fd = e.fd, None  # (cleared first: an interrupt between the two leaks, never double-closes)
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


class Entry:
    __slots__ = ("key", "claim", "placement", "fd")

    def __init__(self, key: Any, claim: Claim, placement: Placement, fd: int | None) -> None:
        self.key, self.claim, self.placement, self.fd = key, claim, placement, fd


class BatchWriter:
    """Claimed messages with written copies, committed ``size`` at a time (steps 2-5).

    ``journal_dir``: the source queue's directory (claims are in it or its ``work/``);
    ``check(entries)``: called after the barrier, before the journal, may re-place copies.
    Use as a context manager: on an error, what is not committed is undone and the error
    propagates; the worker threads are always shut down.

    Pipelined: a full batch's sync starts at once and the batch is committed when the next
    one is full (or at :meth:`flush`), so the disk syncs one batch while this thread commits
    the one before and prepares the next (they took turns: ~a quarter of a requeue's time was
    spent waiting on the barrier alone). At most two batches are claimed at once.
    """

    def __init__(self, c: safety.Confined, journal_dir: str, dest_queue: str, outcomes: list[tuple[Any, str | None]],
                 *, size: int = BATCH_SIZE, check: Callable[[list[Entry]], None] | None = None) -> None:
        self.c, self.journal_dir, self.dest, self.size, self.check = c, journal_dir, dest_queue, size, check
        #: (key, None) of each entry as its batch commits: the caller's record, whatever stops it after
        self.outcomes = outcomes
        self.pending: list[Entry] = []  # being prepared
        #: the batch whose sync runs, not committed yet: (entries, its sync's futures); it is
        #: set before the sync is handed out, so an interrupt anywhere leaves its entries findable
        self.syncing: tuple[list[Entry], list[Future]] | None = None
        self.failed: list[Entry] = []  # of a batch whose commit raised (abort() judges them)
        self.journal: str | None = None  # of the batch being committed
        self.barrier = Barrier()  # (the descriptors stay the entries': closed by _commit or abort)
        #: a ctrl+c came while a batch was committed: raised at the next add() or flush()
        self.stop = False

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(self, exc_type: Any, *_exc: object) -> None:
        try:
            if exc_type is not None:
                # a second ctrl+c (pressed twice) is held until every message is back: raised
                # inside the abort, it left the rest of the batch hidden under claim names, which
                # no consumer takes, with nothing said (race review); the exception on its way
                # out says it all
                with CtrlCHeld(reraise=False):
                    self.abort()
        finally:
            with CtrlCHeld():  # (the pool's own machinery is never cut half-way: see _start_sync)
                self.barrier.shutdown(wait=True)

    def add(self, key: Any, claim: Claim, placement: Placement, fd: int | None) -> None:
        """Take a prepared copy (``fd``: its tmp, written, still open: synced and closed at the
        batch's barrier); a full batch commits the one before it."""
        self.pending.append(Entry(key, claim, placement, fd))
        if self.stop:
            raise KeyboardInterrupt  # (this entry is taken: abort() puts it back)
        if len(self.pending) < self.size:
            return
        prior = self.syncing
        if prior is not None:
            self.failed = prior[0]  # until committed, abort() judges them from here
        self._start_sync()  # (syncing is the new batch now)
        if prior is not None:
            self._commit(*prior)

    def __len__(self) -> int:
        return len(self.pending) + (len(self.syncing[0]) if self.syncing is not None else 0)

    def flush(self) -> None:
        """Commit everything taken."""
        if self.stop:
            raise KeyboardInterrupt
        if self.syncing is not None:
            prior = self.syncing
            self.failed, self.syncing = prior[0], None
            self._commit(*prior)
        if self.pending and self.stop:  # (a ctrl+c during that commit: the last batch goes back)
            raise KeyboardInterrupt
        if self.pending:
            self._start_sync()
            last = self.syncing
            assert last is not None
            self.failed, self.syncing = last[0], None
            self._commit(*last)

    def _start_sync(self) -> None:
        """The pending batch becomes :attr:`syncing`, then its copies go to the barrier."""
        batch: tuple[list[Entry], list[Future]] = (self.pending, [])
        # syncing first, pending after: an interrupt between them leaves the entries in both
        # (abort() takes each once), never in neither
        self.syncing = batch
        self.pending = []
        # ctrl+c held: raised inside the executor's submit (its idle semaphore's lock held, a
        # worker thread half started) it can leave every worker blocked and the shutdown waiting
        # for them for good (seen in publish's barrier, review of 32eac71)
        with CtrlCHeld():
            batch[1].extend(self.barrier.start([e.fd for e in batch[0] if e.fd is not None]))

    def _commit(self, entries: list[Entry], futures: list[Future]) -> None:
        """Commit ``entries`` (held in :attr:`failed` meanwhile, for abort() to judge); their
        keys go to :attr:`outcomes`."""
        _first_error(futures)  # the barrier: every copy of the batch on disk
        for e in entries:
            _close(e)
        if self.check is not None:
            self.check(entries)
        safety.check_names([e.placement.final for e in entries], "message name")
        journal = self._write_journal(entries)
        c = self.c
        # ctrl+c held for the batch's commit (a few ms of renames and unlinks): landing between
        # an entry's rename and its claim's drop it left the entry for recover to judge. One
        # that came meanwhile stops the writer at its next add() or flush(), once these keys
        # are in outcomes (raised here, a committed batch went unreported)
        hold = CtrlCHeld(reraise=False)
        with hold:
            for at in range(0, len(entries), COMMIT_CHUNK):
                chunk = entries[at:at + COMMIT_CHUNK]
                dirs: dict[str, safety.InDir] = {}
                for e in chunk:
                    p = e.placement
                    d = dirs[p.dest_dir] = c.in_dir(p.dest_dir)
                    if not d.rename(p.commit_from, p.final):
                        # only we know the tmp/.new name: left with the journal for recover
                        raise OSError(errno.ENOENT, "commit rename lost its source",
                                      os.path.join(p.dest_dir, p.commit_from))
                # the renames on the disk before their claims go: the next journal fsyncs the
                # source's directory, and a power cut then left a move's copies under temp
                # names (which recover removes) with no claim left
                for d in dirs.values():
                    os.fsync(d.fd)
                # a claim left means "maybe not committed"; the tmp link (VSQS) goes after the
                # claim: while the claim is there, it is the proof of the commit. Dropped in
                # this thread: unlink threads cost more in handing the GIL back and forth than
                # they saved (a requeue on tmpfs: 6,200/s -> 10,500/s)
                for e in chunk:
                    p = e.placement
                    _unlink_all([(e.claim.d.fd, e.claim.claim_name),
                                 *([(dirs[p.dest_dir].fd, p.tmp)] if p.tmp and p.tmp != p.commit_from else [])])
            c.unlink(journal)
            self.journal = None
            self.failed = []
            self.outcomes.extend((e.key, None) for e in entries)
        self.stop = self.stop or hold.came

    def _write_journal(self, entries: list[Entry]) -> str:
        token = new_token()
        doc = {"schema": SCHEMA, "token": token, "dest": self.dest, "entries": [
            {"token": e.claim.token, "src": e.claim.relpath, "commit_from": e.placement.commit_from,
             "final": e.placement.final, "tmp": e.placement.tmp} for e in entries]}
        tmp = os.path.join(self.journal_dir, owned_name(TMP, token))
        path = os.path.join(self.journal_dir, owned_name(BATCH, token))
        self.c.write_new(tmp, json.dumps(doc, separators=(",", ":")).encode())
        try:
            self.c.rename(tmp, path)
        except BaseException:
            self.c.unlink(tmp)
            raise
        self.journal = path
        self.c.sync_dir(self.journal_dir)  # the journal's name is durable before any commit
        return path

    def abort(self) -> None:
        """Undo every entry taken whose copy is not committed: copy dropped, message put
        back. Without a journal nothing was committed; with one, an entry whose commit source
        is gone was, and keeps its claim (and the journal) for recover."""
        # every sync handed out has ended (even one whose future an interrupt lost)
        self.barrier.shutdown(wait=True)
        taken = self.failed + (self.syncing[0] if self.syncing is not None else []) + self.pending
        self.failed, self.syncing, self.pending = [], None, []
        seen: set[int] = set()
        entries = [e for e in taken if id(e) not in seen and not seen.add(id(e))]  # each once
        judge = self.journal is not None
        left_claimed = False
        for e in entries:
            _close(e)
            p, c = e.placement, e.claim.c
            if judge and not c.lexists(os.path.join(p.dest_dir, p.commit_from)):
                left_claimed = left_claimed or c.lexists(e.claim.path)
                continue
            # the message back first, its copy dropped after: a death in between leaves a copy
            # without a claim, which recover can only read as an abort (a commit renames the
            # copy away before its claim goes) and drops; the other order left a claim with no
            # copy, which reads like "committed, then consumed": never settled
            if not e.claim.restore():
                left_claimed = True
                continue  # the copy stays for recover to judge beside the claim
            c.unlink(os.path.join(p.dest_dir, p.commit_from))
            if p.tmp and p.tmp != p.commit_from:
                c.unlink(os.path.join(p.dest_dir, p.tmp))
        if self.journal is not None and not left_claimed:
            self.c.unlink(self.journal)  # nothing of it left to decide
            self.journal = None


def _unlink_all(at: list[tuple[int, str]]) -> None:
    """Unlink each (directory descriptor, name) in order; a name already gone is fine."""
    for fd, name in at:
        safety.unlink_at(fd, name)


def _first_error(futures: list[Future], *, quiet: bool = False) -> None:
    """Wait for every future; raise the first error (unless ``quiet``)."""
    first: BaseException | None = None
    for f in futures:
        try:
            f.result()
        except BaseException as err:
            first = first or err
    if first is not None and not quiet:
        raise first


def drop_tmp(c: safety.Confined, dest_dir: str, token: str) -> None:
    """The tmp a failed prepare may have left for ``token``."""
    c.unlink(os.path.join(dest_dir, owned_name(TMP, token)))


# --------------------------------------------------------------------------- recovery

Found = dict[tuple[str, int, str], list[tuple[str, str, Owned]]]


def _entry_problem(e: object, seen: set[str], is_message: Callable[[str], bool], owner: Owned) -> str | None:
    if not isinstance(e, dict):
        return "an entry is not an object"
    token, src, cf, final, tmp = (e.get(k) for k in ("token", "src", "commit_from", "final", "tmp"))
    if not isinstance(token, str) or len(token) != 8 or not all(ch in "0123456789abcdef" for ch in token):
        return "an entry's token is not a token"
    if token in seen:
        return f"token {token} appears twice"
    seen.add(token)
    try:
        safety.check_relpath(src)
        safety.check_name(cf, "commit_from")
        safety.check_name(final, "final")
        safety.check_name(tmp, "tmp")
    except QConsoleError as err:
        return str(err)
    owned = parse_owned(tmp)
    if owned is None or owned.kind != TMP or owned.token != token or (owned.host, owned.pid) != (owner.host, owner.pid):
        return f"tmp {tmp!r} is not the entry's qconsole temp file (of the journal's own process)"
    if cf != tmp and not cf.endswith(".new"):
        return f"commit_from {cf!r} is neither its tmp nor a .new name"
    if not is_message(final) or not is_message(src.rpartition("/")[2]):
        return "final or src is not a message name"
    return None


def _journal_problem(c: safety.Confined, root: str, jdir: str, doc: Any, owned: Owned,
                     is_message: Callable[[str], bool]) -> str | None:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        return "not a batch journal"
    if doc.get("token") != owned.token:
        return "its token is not the one in its name"
    if os.path.dirname(jdir) != root:
        return "it is not in a queue directory"
    try:
        safety.validate_queue_name(doc.get("dest"))  # type: ignore[arg-type]
    except QConsoleError as err:
        return str(err)
    if not c.is_dir(os.path.join(root, doc["dest"])):
        return f"dest {doc['dest']!r} is not a queue"
    entries = doc.get("entries")
    if not isinstance(entries, list) or not entries or len(entries) > MAX_ENTRIES:
        return "its entries are not a list of 1 to %d" % MAX_ENTRIES
    seen: set[str] = set()
    for e in entries:
        why = _entry_problem(e, seen, is_message, owned)
        if why:
            return why
    return None


def recover_batches(c: safety.Confined, root: str, found: Found, *, force: bool, now: float,
                    is_message: Callable[[str], bool], id_live: Callable[[safety.Confined, str, str], bool],
                    msg_id: Callable[[str], str | None] | None, report: RecoverReport,
                    tick: Callable[[], None] | None = None) -> None:
    """Settle every batch journal in ``found`` (token -> leftovers); the tokens of a journal's
    entries are taken out of ``found``, so the per-token rules see only what no journal names.
    ``msg_id``: when given, a committed copy must carry its source's id (ddmq keeps ids);
    ``tick``: called per journal (:meth:`.claims.RecoverLock.refresh`). A journal or leftover
    gone since the listing was settled by someone else: not a problem."""
    rel = lambda d, n: os.path.relpath(os.path.join(d, n), root)  # noqa: E731
    # a journal that cannot be read or trusted names no entries we could rely on: everything
    # its process left is left alone (per-token rules would put back a claim whose VSQS copy
    # was committed under a new id: a duplicate)
    blocked: set[tuple[str, int]] = set()
    for key in sorted(k for k, items in found.items() if any(o.kind == BATCH for _d, _n, o in items)):
        if tick is not None:
            tick()
        items = found.pop(key)
        journals = [(d, n, o) for d, n, o in items if o.kind == BATCH]
        if len(journals) != 1 or any(o.kind not in (BATCH, TMP) for _d, _n, o in items):
            report.problems.append(f"{rel(*items[0][:2])}: a batch journal's token names other leftovers; "
                                   "they and their process's leftovers left alone")
            blocked.add(key[:2])
            continue
        jd, jn, jo = journals[0]
        jst = c.lstat(os.path.join(jd, jn))
        try:
            doc = json.loads(c.read(os.path.join(jd, jn), max_size=MAX_BATCH_JOURNAL_BYTES))
        except FileNotFoundError:
            # settled and removed meanwhile (its entries' leftovers, if any are still there,
            # are judged by the per-token rules, as a listing made now would have them)
            rest = [i for i in items if i[2].kind != BATCH]
            if rest:
                found[key] = rest
            continue
        except (OSError, ValueError, QConsoleError, RecursionError) as err:
            why = err.strerror if isinstance(err, OSError) and err.strerror else str(err) or "unreadable"
            report.problems.append(f"{rel(jd, jn)}: batch journal unreadable ({why.splitlines()[0][:120]}); "
                                   "it and its process's leftovers left alone")
            blocked.add((jo.host, jo.pid))
            continue
        why = _journal_problem(c, root, jd, doc, jo, is_message)
        if why:
            report.problems.append(f"{rel(jd, jn)}: batch journal does not validate ({why}); "
                                   "it and its process's leftovers left alone")
            blocked.add((jo.host, jo.pid))
            continue
        entries = doc["entries"]
        # the entries' claims and tmps were made by the journal's own process
        parts = {e["token"]: found.pop((jo.host, jo.pid, e["token"]), []) for e in entries}
        if not force and (owner_alive(jo, jst, now) or any(
                owner_alive(o, c.lstat(os.path.join(d, n)), now) for its in parts.values() for d, n, o in its)):
            report.live.append(rel(jd, jn))
            report.live.extend(rel(d, n) for its in parts.values() for d, n, _o in its)
            continue
        dest_dir = os.path.join(root, doc["dest"])
        settled = True
        for e in entries:
            try:
                ok = _recover_entry(c, root, jd, dest_dir, e, parts[e["token"]], id_live, msg_id, is_message, report)
            except (OSError, QConsoleError) as err:
                report.problems.append(f"{rel(jd, jn)}: entry {e['token']}: "
                                       f"{err.strerror if isinstance(err, OSError) else err}; left in place")
                ok = False
            settled = settled and ok
        for d, n, o in items:
            if o.kind == TMP and c.unlink(os.path.join(d, n)):  # the journal's own tmp (a stale one)
                report.removed_temp.append(rel(d, n))
        if settled:
            c.unlink(os.path.join(jd, jn))
    for key in [k for k in found if k[:2] in blocked]:
        found.pop(key)


def _recover_entry(c: safety.Confined, root: str, jdir: str, dest_dir: str, e: dict[str, Any],
                   items: list[tuple[str, str, Owned]], id_live: Callable[[safety.Confined, str, str], bool],
                   msg_id: Callable[[str], str | None] | None, is_message: Callable[[str], bool],
                   report: RecoverReport) -> bool:
    """One entry of a dead batch; True when settled (nothing of it left to decide)."""
    rel = lambda d, n: os.path.relpath(os.path.join(d, n), root)  # noqa: E731
    claims = [(d, n, o) for d, n, o in items if o.kind == CLAIM]
    tmps = [(d, n, o) for d, n, o in items if o.kind == TMP]
    where = rel(jdir, e["src"])
    if len(claims) + len(tmps) != len(items) or len(claims) > 1 or len(tmps) > 1:
        report.problems.append(f"{where}: its token names other leftovers; left alone")
        return False
    stats = {(d, n): c.lstat(os.path.join(d, n)) for d, n, _o in items}
    if any(st is None for st in stats.values()):  # gone since the listing: settled by someone else
        items = [(d, n, o) for d, n, o in items if stats[(d, n)] is not None]
        claims = [(d, n, o) for d, n, o in items if o.kind == CLAIM]
        tmps = [(d, n, o) for d, n, o in items if o.kind == TMP]
    if any(not _is_reg(stats[(d, n)]) for d, n, _o in items):
        report.problems.append(f"{where}: a leftover is not a regular file; left alone")
        return False
    if tmps and (tmps[0][0] != dest_dir or tmps[0][1] != e["tmp"]):
        report.problems.append(f"{where}: its tmp is not where its journal says; left alone")
        return False
    cf = os.path.join(dest_dir, e["commit_from"])
    tmp = os.path.join(dest_dir, e["tmp"])
    cf_st = c.lstat(cf)
    if cf_st is not None and not _is_reg(cf_st):
        report.problems.append(f"{rel(dest_dir, e['commit_from'])}: not a regular file; left alone")
        return False
    own_new = cf_st is not None and (e["commit_from"] == e["tmp"] or c.same_file(cf, tmp))
    if not claims:
        if cf_st is not None:
            if not own_new:
                report.problems.append(f"{where}: a prepared copy without its claim; left alone")
                return False
            # the entry's own copy, its claim gone: an abort that put the message back and died
            # before dropping the copy (a commit renames the copy away before the claim goes)
            c.unlink(cf)
            report.removed_temp.append(rel(dest_dir, e["commit_from"]))
        for d, n, _o in tmps:  # committed and cleaned but for a second link of the final
            if c.unlink(os.path.join(d, n)):
                report.removed_temp.append(rel(d, n))
        return True
    d, n, o = claims[0]
    sub, _, name = e["src"].rpartition("/")
    why = _claim_problem(d, o, is_message)
    if why is None and (o.relpath != e["src"] or d != (os.path.join(jdir, sub) if sub else jdir)):
        why = "it is not the claim its journal names"
    if why:
        report.problems.append(f"{rel(d, n)}: {why}; left alone")
        return False
    claim_path = os.path.join(d, n)
    if cf_st is not None:  # not committed: the message comes back, then the copy goes
        if not own_new:
            report.problems.append(f"{rel(dest_dir, e['commit_from'])}: not the entry's copy; left alone")
            return False
        # in abort()'s order: the copy dropped first, a recover killed between its put-back's
        # link and unlink left a claim with no copy, which every later recover read as
        # "commit source gone, no committed copy live" and left alone for good
        if c.same_file(claim_path, os.path.join(d, name)):  # put back, but the claim's name not yet dropped
            c.unlink(claim_path)
        elif id_live(c, jdir, name):
            report.problems.append(f"{rel(d, n)}: its id is live in the queue already; left in place")
            return False
        elif not c.link_noclobber(claim_path, os.path.join(d, name)):
            report.problems.append(f"{rel(d, n)}: could not put back as {e['src']!r}; left in place")
            return False
        report.restored.append(rel(d, name))
        c.unlink(cf)
        if c.unlink(tmp) or e["commit_from"] == e["tmp"]:
            report.removed_temp.append(rel(dest_dir, e["tmp"]))
        return True
    if msg_id is not None and e["commit_from"] == e["tmp"]:  # ddmq: the copy, renamed into place, keeps the id
        final_ok = id_live(c, dest_dir, e["final"]) and msg_id(e["final"]) == msg_id(name)
    else:  # VSQS: the claim goes before the tmp, so the tmp still links the committed copy
        final_ok = bool(tmps) and _links_live(c, dest_dir, e["final"], tmp)
    if not final_ok:
        report.problems.append(f"{rel(d, n)}: its journal's commit source is gone and no committed copy is live; "
                               "left alone")
        return False
    if tmps and c.unlink(tmp):
        report.removed_temp.append(rel(dest_dir, e["tmp"]))
    c.unlink(claim_path)
    report.completed.append(rel(d, n))
    return True


def _links_live(c: safety.Confined, dest_dir: str, final: str, tmp: str) -> bool:
    """Whether ``tmp`` is the same file as a live name of ``final``'s id (``<id>``, or the
    ``<id>.<deadline>`` a consumer renamed it to)."""
    head = final + "."
    return any(c.same_file(tmp, os.path.join(dest_dir, n))
               for n in c.listdir(dest_dir) if n == final or (n.startswith(head) and not n.endswith(".new")))


__all__ = ["BatchWriter", "BATCH_SIZE", "recover_batches", "drop_tmp"]
