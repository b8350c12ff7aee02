"""What both file layouts share: a root directory, its queues, counting them (in parallel when
asked), the trash, claims and recovery. :class:`FileBackend` is the base of the VSQS and ddmq
backends; each adds what its layout's names and files mean."""

from __future__ import annotations

import os
import stat
import time
from itertools import repeat
from operator import attrgetter, contains

from ...errors import OperationError, QueueNameError, RootError, UnknownQueueError
from ...model import QueueScan, RootScan
from ..base import CHECK_TYPES, PARALLEL_SCAN, RECOVER, TRASH, Backend

_ID, _RELPATH = attrgetter("id"), attrgetter("relpath")
#: a trash manifest's item: the message's queue, relpath and id
_ITEM_KEYS = ("queue", "relpath", "id")

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from types import ModuleType
    from typing import Any

    from ...model import Message
    from ...payload import Payload
    from ..results import TrashBatch


def resolve_root(root: str | os.PathLike[str] | None) -> str:
    """An absolute, readable root directory, or RootError with one clear line."""
    if root is None or str(root) == "":
        raise RootError("no root given: pass ROOT, --root DIR or set QCONSOLE_ROOT (try `qconsole demo`)")
    path = os.path.abspath(os.fspath(root))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise RootError(f"root {path} does not exist") from None
    except PermissionError:
        raise RootError(f"root {path}: permission denied") from None
    except OSError as err:
        raise RootError(f"root {path}: {err.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise RootError(f"root {path} is not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise RootError(f"root {path}: permission denied")
    return path


from .safety import validate_queue_name  # noqa: E402 (one place for the rules that protect data)

#: a directory whose change times are newer than this (s) is listed again even if its stamp is
#: equal: two changes within one timestamp tick leave the same mtime
STAMP_SETTLE_S = 2.0
#: a directory is listed again after this long (s) whatever its stamp says: an NFS client caches
#: directory attributes (acdirmax, 60 s by default), so an unchanged stamp may be a cached one
FULL_RELIST_S = 30.0


def same_stamp(then: Any, now: Any, age_s: float) -> bool:
    """Equal stamps that had settled, taken less than FULL_RELIST_S apart."""
    return then is not None and then == now and now[1] and age_s < FULL_RELIST_S


class FileBackend(Backend):
    """A validated root directory of one file layout. Subclasses set ``module`` (the layout's
    scanner module) and implement the layout-specific changes."""

    capabilities = frozenset({TRASH, RECOVER, PARALLEL_SCAN, CHECK_TYPES})
    report_module = "qconsole.backends.fs.report_chunks"
    module: ModuleType

    def __init__(self, path: str) -> None:
        self.path = path
        self.target = path

    # ------------------------------------------------------------------ reading

    def default_audit_log(self) -> str:
        from ...ops import audit

        return audit.default_path(self.path)

    def validate_queue_name(self, name: str) -> str:
        return validate_queue_name(name)

    @classmethod
    def check_new_queue_name(cls, name: str) -> str:
        """What `create` makes: a plain name (as for every queue) that also shows as itself on
        one line: no control or invisible character (a line end, ESC, tab, zero-width space,
        a bidi override: `ls --ids`, tables and logs escape them), no blank at either end
        (' a' and 'a ' read as 'a'). A directory already named so is still a queue."""
        validate_queue_name(name)
        if not name.isprintable():
            raise QueueNameError(f"bad queue name {name!r}: control or invisible characters "
                                 "(a new queue's name shows as itself, on one line)")
        if name != name.strip():
            raise QueueNameError(f"bad queue name {name!r}: blanks at its start or end "
                                 "(a new queue's name shows as itself)")
        return name

    @classmethod
    def make_target(cls, target: str) -> bool:
        from . import safety

        path = os.path.abspath(target)
        if os.path.isdir(path):
            cls._refuse_other_layout(target)
        if os.path.lexists(path):
            return False
        safety.make_root_dir(path)
        return True

    @classmethod
    def _refuse_other_layout(cls, target: str) -> None:
        """An existing root of the other layout is not made into one of this (a ddmq.yaml
        written into a VSQS root hid its queues from every later command and monitor)."""
        from .detect import detect_layout

        try:
            found = detect_layout(target)
        except RootError:
            return  # empty, or neither layout yet: the new queue decides
        if found != cls.kind:
            raise OperationError(f"{target} is a {found} root: not creating a {cls.kind} queue in it (drop --layout)")

    def queue_names(self) -> tuple[list[str], list[str]]:
        try:
            return self.module.list_queue_names(self.path)
        except OSError as err:
            raise RootError(f"cannot read root {self.path}: {err.strerror}") from None

    def queue_path(self, name: str) -> str:
        return os.path.join(self.path, validate_queue_name(name))

    def is_queue_dir(self, path: str) -> bool:
        return True

    def require_queue(self, name: str) -> str:
        """Path of an existing queue, or UnknownQueueError."""
        path = self.queue_path(name)
        if os.path.islink(path) or not os.path.isdir(path):
            raise UnknownQueueError(f"no queue {name!r} in {self.path}")
        if not self.is_queue_dir(path):
            raise UnknownQueueError(f"{name!r} in {self.path} is not a {self.kind} queue")
        return path

    def scan_queue(
        self, name: str, now: float | None = None, *, collect: bool | str = False, check_types: bool = False
    ) -> QueueScan:
        self.require_queue(name)
        return self.module.scan_queue(self.path, name, now, collect=collect, check_types=check_types)

    def held_messages(self, name: str) -> list[Message]:
        # the layouts' collect="held": the ready names are not made into messages
        return self.scan_queue(name, collect="held").readable().held_messages()

    def start_first_count(self, now: float | None = None) -> Any:
        from .first_count import FirstCount

        return FirstCount.start(self, now)

    def columns_lister(self) -> Any:
        """The layout's own ``list_columns`` (names to columns, by difference), or None: then
        the columns are made from a collected scan."""
        return None

    def queue_stamp(self, name: str) -> Any:
        """The listed directories' inode, change times, size and link count, and whether they
        had settled (last changed over STAMP_SETTLE_S ago): a change within one timestamp
        tick of the last look could otherwise hide behind an equal stamp."""
        wall = time.time()
        dirs = []
        settled = True
        for d in self.module.listing_dirs(self.path, validate_queue_name(name)):
            try:
                st = os.stat(d)
            except OSError:
                dirs.append(None)
                continue
            dirs.append((st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_nlink))
            settled = settled and max(st.st_mtime_ns, st.st_ctime_ns) / 1e9 < wall - STAMP_SETTLE_S
        return (tuple(dirs), settled)

    def unchanged_since(self, then: Any, now: Any, age_s: float) -> bool:
        return same_stamp(then, now, age_s)

    def list_messages(self, name: str, now: float | None = None, *, previous: Any = None,
                      progress: Any = None) -> Any:
        """Columns of one queue; ``previous`` comes back as it is when the directories'
        stamps are equal and settled, unless it is older than FULL_RELIST_S (NFS clients cache
        directory attributes, so a stamp alone is never trusted for long)."""
        self.require_queue(name)
        stamp = self.queue_stamp(name)
        if previous is not None and not previous.partial and \
                same_stamp(previous.stamp, stamp, time.monotonic() - previous.listed_at):
            return previous
        started = time.monotonic()
        lister = self.columns_lister()
        if lister is not None:
            return lister(self.path, name, now, previous=previous, progress=progress, stamp=stamp)
        cols = super().list_messages(name, now, previous=previous, progress=progress)
        cols.stamp = stamp
        cols.listed_at = started
        return cols

    def scan(
        self,
        queues: Iterable[str] | None = None,
        now: float | None = None,
        *,
        check_types: bool = False,
        jobs: int | None = 1,
        each: Callable[[QueueScan, float], Any] | None = None,
    ) -> RootScan:
        """Counts for every queue (or the named ones), from directory listings only.

        By names alone unless ``check_types``: then each entry's type (from the listing,
        no stat) also counts FIFOs, symlinks etc. named like messages as ``foreign``.
        ``jobs``: processes to scan with (:mod:`.parallel`); None picks by the
        root's size. Only single-threaded callers (the one-shot CLI) may ask for more than 1.
        ``each(scan, now)``: run on every queue's scan in the process that scanned it (a
        marshallable result, e.g. its part of the stats document), kept in ``per_queue``.
        """
        started = time.perf_counter()
        now = time.time() if now is None else now
        module, path = self.module, self.path
        # the whole root: sub-directories still to be looked into, where a layout checks each
        # queue as it counts it (in the forked scanners: ddmq's queue_candidates)
        candidates = None if queues else getattr(module, "queue_candidates", None)
        try:
            got = candidates(path) if candidates is not None else None
        except OSError as err:
            raise RootError(f"cannot read root {path}: {err.strerror}") from None
        unchecked = got is not None
        names, errors = got if got is not None else self.queue_names()
        if queues:
            # each queue once: `-q a -q a` (a generated list) counted it twice in the totals,
            # repeated its Prometheus series (a scrape fails) and its Nagios perfdata
            wanted = list(dict.fromkeys(validate_queue_name(q) for q in queues))
            missing = [q for q in wanted if q not in names]
            if missing:
                raise UnknownQueueError(f"no queue {missing[0]!r} in {self.path}")
            names = wanted
        prepare = getattr(module, "prepare_count", None)
        if prepare is not None:
            prepare(len(names))  # (before any scanner is forked)
        # beside: a big queue is parsed in a forked process while this one lists it: never
        # with --jobs 1, always for one queue with --jobs 2 and up, else (None) when a core is
        # idle at that moment (not while the other shares' processes keep them busy)
        beside: bool | None = None if jobs != 1 else False
        if jobs is not None and jobs > 1 and len(names) < 2:
            beside = True

        more = {"unchecked": True} if unchecked else {}

        def scan_share(share: list[str]) -> list[QueueScan]:
            return module.count_many(path, share, now, check_types=check_types, beside=beside, **more)

        per_queue = None
        if jobs == 1 or len(names) < 2:
            scans = scan_share(names)
        else:
            from . import parallel

            order, jobs = parallel.arrange(path, names, module.listing_dirs, jobs)
            if jobs > 1:
                done = parallel.scan_pooled(order, jobs, scan_share, each and (lambda s: each(s, now)))
                scans = [done[n][0] for n in names]
                per_queue = [done[n][1] for n in names] if each else None
            else:
                scans = scan_share(names)
        if unchecked and not all(s.layout for s in scans):  # sub-directories that are no queue
            keep = [i for i, s in enumerate(scans) if s.layout]
            # in the order list_queue_names gives them (sorted), not the symlinks' lines first
            errors = sorted(errors + [e for s in scans if not s.layout for e in s.errors])
            scans = [scans[i] for i in keep]
            per_queue = [per_queue[i] for i in keep] if per_queue is not None else None
        if each and per_queue is None:
            per_queue = [each(s, now) for s in scans]
        return RootScan(
            root=self.path, layout=self.kind, generated_at=now,
            duration_s=time.perf_counter() - started, queues=scans, errors=errors, per_queue=per_queue,
        )

    def read_payload(self, msg: Message, cap: int | None) -> Payload:
        from ...payload import payload_from_bytes

        data, size = self.read_message_file(msg, None if cap is None else cap + 1)
        return payload_from_bytes(data, size, cap)

    def read_message_file(self, msg: Message, limit: int | None) -> tuple[bytes, int]:
        """Up to ``limit`` bytes of a message file and its size; no link on the way followed."""
        from ...errors import MessageNotFoundError, QConsoleError
        from . import safety

        path = os.path.join(self.require_queue(msg.queue), safety.check_relpath(msg.relpath))
        with safety.Confined(self.path) as c:
            try:
                st = c.lstat(path)
                data = c.read(path, limit)
            except FileNotFoundError:
                raise MessageNotFoundError(f"{msg.name}: gone (consumed or moved meanwhile)") from None
            except OSError as err:
                raise QConsoleError(f"{msg.name}: {err.strerror}") from None
            if st is None:
                raise MessageNotFoundError(f"{msg.name}: gone (consumed or moved meanwhile)")
        return data, st.st_size

    def message_sizes(self, queue: str, msgs: Sequence[Message]) -> dict[str, int | None]:
        qdir = self.require_queue(queue)
        out: dict[str, int | None] = {}
        for m in msgs:
            try:
                out[m.relpath] = os.lstat(os.path.join(qdir, m.relpath)).st_size
            except OSError:
                out[m.relpath] = None  # consumed or moved since the listing
        return out

    # ------------------------------------------------------------------ changes shared by both layouts

    def remove(self, action: str, queue: str, msgs: Sequence[Message], *, use_trash: bool,
               user: str) -> tuple[list[tuple[str, str | None]], str | None]:
        from . import safety, trash
        from ..results import CHANGED, Partial

        qdir = self.require_queue(queue)
        if not msgs:
            return [], None
        # per directory of the queue (the queue, work/): both directories opened once, and the
        # names renamed or unlinked in one batch (safety.DirPair.renames), not a call chain each
        relpaths = list(map(_RELPATH, msgs))
        groups: dict[str | None, list[int]] = {}
        names: list[str] = relpaths
        if any(map(contains, relpaths, repeat("/"))):  # some in work/ (ddmq)
            names = []
            for i, rel in enumerate(relpaths):
                head, sep, tail = rel.partition("/")
                groups.setdefault(head if sep else None, []).append(i)
                names.append(tail if sep else head)
        elif relpaths:
            groups[None] = list(range(len(relpaths)))  # all in the queue directory itself
        ids = list(map(_ID, msgs))
        ok = [False] * len(msgs)
        with safety.Confined(self.path) as c:
            filling = trash.Filling(c, action, queue, self.kind, user) if use_trash else None
            items: list[dict[str, Any]] = []
            stopped = None  # what was done, when stopped early (self.partial)
            idx: list[int] = []
            try:
                base = 0  # messages of the groups before (progress counts the whole)
                for sub, idx in groups.items():
                    if sub is not None:
                        safety.check_relpath(msgs[idx[0]].relpath)  # work/NAME only (raises)
                    src_dir = os.path.join(qdir, sub) if sub else qdir
                    batch = [names[i] for i in idx]
                    tick = (lambda k, b=base: self.tick(b + k, len(msgs)))
                    base += len(idx)
                    if filling:
                        pair = c.pair(src_dir, os.path.dirname(filling.path(relpaths[idx[0]])))
                        errs = pair.renames(batch, batch, tick)
                        if not any(errs):  # all moved (nearly always): the records built in C
                            for i in idx:
                                ok[i] = True
                            items += map(dict, map(zip, repeat(_ITEM_KEYS), zip(
                                repeat(queue), map(relpaths.__getitem__, idx), map(ids.__getitem__, idx))))
                            continue
                        for i, err in zip(idx, errs):
                            if not err or self._trash_one(queue, pair, names[i]):
                                ok[i] = True
                                items.append({"queue": queue, "relpath": relpaths[i], "id": ids[i]})
                    else:
                        pair = c.pair(src_dir, src_dir)
                        for i, err in zip(idx, pair.unlinks(batch, tick)):
                            ok[i] = not err or pair.unlink(names[i])
            except BaseException:
                if filling:  # stopped or failed: the manifest names what the trash holds, by its listing
                    items = filling.reconciled(items, dict(zip(relpaths, ids)))
                    stopped = Partial(outcomes=[(item.get("id") or item["relpath"], None) for item in items])
                else:  # the group being unlinked when it stopped: each done or not
                    stopped = Partial(outcomes=[(ids[i], None) for i, k in enumerate(ok) if k],
                                      unknown=sum(1 for i in idx if not ok[i]))
                self.partial = stopped
                raise
            finally:
                # published under its name only now, complete; removed when nothing went in
                done = filling.finish(items) if filling else None
                if stopped is not None:
                    stopped.batch = done
        self.tick(len(msgs), len(msgs))
        if all(ok):
            return list(zip(ids, repeat(None))), done
        return [(mid, None if k else CHANGED) for mid, k in zip(ids, ok)], done

    @staticmethod
    def _trash_one(queue: str, pair: Any, name: str) -> bool:
        """One name into the trash the slow way (after the batch did not move it): False when
        it is gone; a trash on another mount is refused in words."""
        import errno

        try:
            return pair.rename(name, name)
        except OSError as err:
            if err.errno == errno.EXDEV:  # the queue is another mount than the root
                raise OperationError(f"{queue}: the trash is on another file system; use --no-trash") from None
            raise

    #: messages per batch journal of a move (see fs.batches)
    MOVE_BATCH = 256

    def move(self, src: str, dest: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        """Claim each message, place a copy in ``dest`` by the layout's protocol, commit in
        batches under one journal each (:mod:`.batches`)."""
        from ...errors import QConsoleError
        from . import batches, claims, safety
        from ..results import CHANGED, Partial

        src_dir = self.require_queue(src)
        dest_dir = self.require_queue(dest)
        outcomes: list[tuple[str, str | None]] = []
        self.partial = Partial(outcomes=outcomes)  # the committed ones, if it stops early
        # oldest first, whatever their state, so DEST keeps the order they were published in
        msgs = sorted(msgs, key=lambda m: (m.created_at or 0.0, m.id))
        with safety.Confined(self.path) as c:
            place, check = self.move_placer(c, dest, dest_dir)  # refuses bad DEST settings before any claim
            with batches.BatchWriter(c, src_dir, dest, outcomes, size=self.MOVE_BATCH, check=check) as writer:
                for msg in msgs:
                    self.tick(len(outcomes) + len(writer), len(msgs))
                    claim = claims.Claim(c, src_dir, msg.relpath)
                    if not claim.acquire():
                        outcomes.append((msg.id, CHANGED))
                        continue
                    try:
                        data = claim.read()
                        placement, fd = place(msg, data, claim.token)
                    except (QConsoleError, OSError, MemoryError) as err:
                        batches.drop_tmp(c, dest_dir, claim.token)
                        claim.restore()
                        why = (str(err) if isinstance(err, QConsoleError) else err.strerror
                               if isinstance(err, OSError) else "too large to copy in memory")
                        outcomes.append((msg.id, f"left as it was: {why}"))
                        continue
                    except BaseException:
                        batches.drop_tmp(c, dest_dir, claim.token)
                        claim.restore()
                        raise
                    writer.add(msg.id, claim, placement, fd)
                writer.flush()
        self.tick(len(msgs), len(msgs))
        return outcomes

    def move_placer(self, c: Any, dest: str, dest_dir: str) -> Any:
        """``(place, check)``: ``place(msg, data, token) -> (Placement, fd)`` writes the copy
        for ``dest``; ``check(entries)`` runs before each batch's journal (or None)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ trash / recovery

    def trash_list(self) -> list[TrashBatch]:
        from . import trash

        return trash.list_batches(self.path)

    def trash_batch_queue(self, batch: str | None) -> tuple[str, str | None]:
        from . import trash

        name = trash.require_batch(self.path, batch)
        return name, trash.batch_queue(self.path, name)

    def trash_restore(self, batch: str) -> tuple[list[str], list[tuple[str, str]]]:
        from . import trash

        return trash.restore(self.path, batch, self.ready_target, self.message_id, self.is_queue_dir, self.tick)

    def ready_target(self, relpath: str) -> tuple[str, str] | None:
        """(ready name, id) a trashed file comes back as; layouts parse the name once."""
        target = self.ready_name(relpath)
        mid = self.message_id(target) if target else None
        return (target, mid) if target and mid else None

    #: whether a requeued/moved copy keeps its message's id (recover checks a committed one)
    moves_keep_ids = False

    def message_id(self, name: str) -> str | None:
        """The id a queue file name carries in any state (None: not a message name)."""
        raise NotImplementedError

    def id_live(self, c: Any, qdir: str, name: str) -> bool:
        """Whether the id of message name ``name`` is live in ``qdir`` in any state."""
        mid = self.message_id(name)
        if mid is None:
            return False
        for sub in ("", "work"):
            try:
                names = c.listdir(os.path.join(qdir, sub) if sub else qdir)
            except (OSError, Exception):
                continue
            if any(self.message_id(n) == mid for n in names):
                return True
        return False

    def ready_name(self, relpath: str) -> str | None:
        """The ready name a trashed file comes back as (in-flight ones come back ready)."""
        raise NotImplementedError

    def trash_empty(self, older_than_s: float | None) -> list[tuple[str, str | None]]:
        from . import trash

        return trash.empty(self.path, older_than_s, self.tick)

    def recover(self, *, force: bool = False) -> Any:
        """Put back what killed qconsole processes left claimed (see :mod:`.claims`)."""
        from . import claims, trash

        published = [b for hidden, b in trash.orphaned_fills(self.path, force=force)
                     if trash.publish_orphan(self.path, hidden, b)]
        names, _errors = self.queue_names()
        dirs = [self.path] + [os.path.join(self.path, n) for n in names]
        dirs += [os.path.join(trash.trash_dir(self.path), b.batch) for b in trash.list_batches(self.path)]
        report = claims.recover(self.path, dirs, force=force,
                                is_message=lambda n: self.message_id(n) is not None, id_live=self.id_live,
                                msg_id=self.message_id if self.moves_keep_ids else None)
        report.completed.extend(f"trash batch {b} (its purge was killed)" for b in published)
        return report

    def reopen_spec(self) -> dict[str, Any]:
        return {"target": self.path, "layout": self.kind}


