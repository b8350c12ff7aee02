"""Scanning a root: validate it, detect its layout, count every queue from names alone."""

from __future__ import annotations

import os
import stat
import time

from .errors import MessageNotFoundError, QueueNameError, RootError, UnknownQueueError
from .layouts import module_for, resolve_layout
from .model import Message, QueueScan, RootScan
from .states import READY

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterable


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


def validate_queue_name(name: str) -> str:
    """A plain queue name: no ``/``, no NUL, not ``.``/``..``, not a dot-directory."""
    if not name:
        raise QueueNameError("empty queue name")
    if "/" in name or "\0" in name or "\\" in name:
        raise QueueNameError(f"bad queue name {name!r}: a queue name is a plain name, without '/'")
    if name in (".", ".."):
        raise QueueNameError(f"bad queue name {name!r}")
    if name.startswith("."):
        raise QueueNameError(f"bad queue name {name!r}: dot-directories are never queues")
    return name


class Root:
    """A validated root and its layout: the handle every command and screen works through."""

    def __init__(self, path: str | os.PathLike[str] | None, layout: str | None = "auto") -> None:
        self.path = resolve_root(path)
        self.layout = resolve_layout(self.path, layout)
        self.module = module_for(self.layout)

    def queue_names(self) -> tuple[list[str], list[str]]:
        try:
            return self.module.list_queue_names(self.path)
        except OSError as err:
            raise RootError(f"cannot read root {self.path}: {err.strerror}") from None

    def queue_path(self, name: str) -> str:
        return os.path.join(self.path, validate_queue_name(name))

    def require_queue(self, name: str) -> str:
        """Path of an existing queue, or UnknownQueueError."""
        path = self.queue_path(name)
        if os.path.islink(path) or not os.path.isdir(path):
            raise UnknownQueueError(f"no queue {name!r} in {self.path}")
        if self.layout == "ddmq" and not self.module.is_queue_dir(path):
            raise UnknownQueueError(f"{name!r} in {self.path} is not a ddmq queue (no ddmq.yaml and work/)")
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
        ``jobs``: processes to scan with (:mod:`qconsole.parallel`); None picks by the
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

        def scan_one(name: str) -> QueueScan:
            return module.scan_queue(path, name, now, check_types=check_types)

        if jobs == 1 or len(names) < 2:
            scans = [scan_one(n) for n in names]
        else:
            from . import parallel

            sizes = {n: parallel.dir_size(module.listing_dirs(path, n)) for n in names}
            jobs = parallel.auto_jobs(list(sizes.values())) if jobs is None else min(jobs, len(names))
            if jobs > 1:
                done = parallel.scan_shares(parallel.plan(sizes, jobs), scan_one)
                scans = [done[n] for n in names]
            else:
                scans = [scan_one(n) for n in names]
        return RootScan(
            root=self.path, layout=self.layout, generated_at=now,
            duration_s=time.perf_counter() - started, queues=scans, errors=errors,
        )


def find_message(scan: QueueScan, ident: str) -> Message:
    """The message with id (or file name) ``ident`` in a collected scan, or MessageNotFoundError."""
    for msg in scan.messages or ():
        if msg.id == ident or msg.relpath == ident or msg.name == ident:
            return msg
    raise MessageNotFoundError(f"no message {ident!r} in queue {scan.name!r}")


def next_message(scan: QueueScan) -> Message:
    """The message the real consumer would take next (first ready in delivery order)."""
    for msg in scan.messages or ():
        if msg.state == READY:
            return msg
    raise MessageNotFoundError(f"queue {scan.name!r} has no ready message")
