"""What both file layouts share: a root directory, its queues, counting them (in parallel when
asked), the trash, claims and recovery. :class:`FileBackend` is the base of the VSQS and ddmq
backends; each adds what its layout's names and files mean."""

from __future__ import annotations

import os
import stat
import time

from ...errors import OperationError, QueueNameError, RootError, UnknownQueueError
from ...model import QueueScan, RootScan
from ..base import CHECK_TYPES, PARALLEL_SCAN, RECOVER, TRASH, Backend

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


class FileBackend(Backend):
    """A validated root directory of one file layout. Subclasses set ``module`` (the layout's
    scanner module) and implement the layout-specific changes."""

    capabilities = frozenset({TRASH, RECOVER, PARALLEL_SCAN, CHECK_TYPES})
    report_module = "qconsole.backends.fs.report_chunks"
    module: ModuleType
    #: ``(done, total)`` called as a bulk change goes (the CLI's progress line on a terminal)
    progress: Callable[[int, int], None] | None = None

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)

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
        return validate_queue_name(name)

    @classmethod
    def make_target(cls, target: str) -> bool:
        from . import safety

        path = os.path.abspath(target)
        if os.path.lexists(path):
            return False
        safety.make_root_dir(path)
        return True

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
        self, name: str, now: float | None = None, *, collect: bool = False, check_types: bool = False
    ) -> QueueScan:
        self.require_queue(name)
        return self.module.scan_queue(self.path, name, now, collect=collect, check_types=check_types)

    def scan(
        self,
        queues: Iterable[str] | None = None,
        now: float | None = None,
        *,
        check_types: bool = False,
        jobs: int | None = 1,
    ) -> RootScan:
        """Counts for every queue (or the named ones), from directory listings only.

        By names alone unless ``check_types``: then each entry's type (from the listing,
        no stat) also counts FIFOs, symlinks etc. named like messages as ``foreign``.
        ``jobs``: processes to scan with (:mod:`.parallel`); None picks by the
        root's size. Only single-threaded callers (the one-shot CLI) may ask for more than 1.
        """
        started = time.perf_counter()
        now = time.time() if now is None else now
        names, errors = self.queue_names()
        if queues:
            wanted = [validate_queue_name(q) for q in queues]
            missing = [q for q in wanted if q not in names]
            if missing:
                raise UnknownQueueError(f"no queue {missing[0]!r} in {self.path}")
            names = wanted
        module, path = self.module, self.path

        def scan_share(share: list[str]) -> list[QueueScan]:
            # beside: a big queue is parsed in a forked process while this one lists it
            return module.count_many(path, share, now, check_types=check_types, beside=jobs != 1)

        if jobs == 1 or len(names) < 2:
            scans = scan_share(names)
        else:
            from . import parallel

            sizes = parallel.listing_sizes(path, names, module.listing_dirs)
            jobs = parallel.auto_jobs(list(sizes.values())) if jobs is None else min(jobs, len(names))
            if jobs > 1:
                done = parallel.scan_shares(parallel.plan(sizes, jobs), scan_share)
                scans = [done[n] for n in names]
            else:
                scans = scan_share(names)
        return RootScan(
            root=self.path, layout=self.kind, generated_at=now,
            duration_s=time.perf_counter() - started, queues=scans, errors=errors,
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
        import errno

        from . import safety, trash
        from ..results import CHANGED

        qdir = self.require_queue(queue)
        outcomes: list[tuple[str, str | None]] = []
        if not msgs:
            return outcomes, None
        with safety.Confined(self.path) as c:
            filling = trash.Filling(c, action, queue, self.kind, user) if use_trash else None
            items: list[dict[str, Any]] = []
            try:
                for m in msgs:
                    self.tick(len(outcomes), len(msgs))
                    src = os.path.join(qdir, safety.check_relpath(m.relpath))
                    if filling:
                        try:
                            ok = c.rename(src, filling.path(m.relpath))
                        except OSError as err:
                            if err.errno == errno.EXDEV:  # the queue is another mount than the root
                                raise OperationError(f"{queue}: the trash is on another file system; "
                                                     "use --no-trash") from None
                            raise
                        if ok:
                            items.append({"queue": queue, "relpath": m.relpath, "id": m.id})
                    else:
                        ok = c.unlink(src)
                    outcomes.append((m.id, None if ok else CHANGED))
            finally:
                # published under its name only now, complete; removed when nothing went in
                batch = filling.finish(items) if filling else None
        return outcomes, batch

    def move(self, src: str, dest: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        """Claim each message, place a copy in ``dest`` by the layout's protocol, commit."""
        from ...errors import QConsoleError
        from . import claims, safety
        from ..results import CHANGED

        src_dir = self.require_queue(src)
        dest_dir = self.require_queue(dest)
        outcomes: list[tuple[str, str | None]] = []
        # oldest first, whatever their state, so DEST keeps the order they were published in
        msgs = sorted(msgs, key=lambda m: (m.created_at or 0.0, m.id))
        with safety.Confined(self.path) as c:
            placer_for = self.move_placer(c, dest, dest_dir)  # refuses bad DEST settings before any claim
            for msg in msgs:
                self.tick(len(outcomes), len(msgs))
                claim = claims.Claim(c, src_dir, msg.relpath)
                if not claim.acquire():
                    outcomes.append((msg.id, CHANGED))
                    continue
                try:
                    data = claim.read()
                    prepare = placer_for(msg, data)
                except (QConsoleError, OSError) as err:
                    claim.restore()
                    why = str(err) if isinstance(err, QConsoleError) else err.strerror
                    outcomes.append((msg.id, f"left as it was: {why}"))
                    continue
                claims.transfer(claim, dest, dest_dir, prepare, data)
                outcomes.append((msg.id, None))
        return outcomes

    def move_placer(self, c: Any, dest: str, dest_dir: str) -> Any:
        """``(msg, data) -> prepare`` for :func:`.claims.transfer` into ``dest``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ trash / recovery

    def trash_list(self) -> list[TrashBatch]:
        from . import trash

        return trash.list_batches(self.path)

    def trash_batch_queue(self, batch: str | None) -> tuple[str, str | None]:
        from . import trash

        name = trash.require_batch(self.path, batch)
        queue = trash.read_batch_manifest(self.path, name).get("queue")
        return name, queue if isinstance(queue, str) and len(queue) < 256 else None

    def trash_restore(self, batch: str) -> tuple[list[str], list[tuple[str, str]]]:
        from . import trash

        return trash.restore(self.path, batch, self.ready_name, self.message_id, self.is_queue_dir, self.tick)

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

    def trash_empty(self, older_than_s: float | None) -> list[str]:
        from . import trash

        return trash.empty(self.path, older_than_s)

    def recover(self, *, force: bool = False) -> Any:
        """Put back what killed qconsole processes left claimed (see :mod:`.claims`)."""
        from . import claims, trash

        published = [b for hidden, b in trash.orphaned_fills(self.path, force=force)
                     if trash.publish_orphan(self.path, hidden, b)]
        names, _errors = self.queue_names()
        dirs = [self.path] + [os.path.join(self.path, n) for n in names]
        dirs += [os.path.join(trash.trash_dir(self.path), b.batch) for b in trash.list_batches(self.path)]
        report = claims.recover(self.path, dirs, force=force,
                                is_message=lambda n: self.message_id(n) is not None, id_live=self.id_live)
        report.completed.extend(f"trash batch {b} (its purge was killed)" for b in published)
        return report

    def reopen_spec(self) -> dict[str, Any]:
        return {"target": self.path, "layout": self.kind}


