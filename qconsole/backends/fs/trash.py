"""The trash: ``<root>/.qconsole/trash/<batch>/`` on the root's file system, so every delete
is one rename and every restore one link. Files keep their queue-relative path under
``files/<queue>/``, so a batch is restorable even when the manifest was never completed."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from typing import Any

from .claims import CFG, new_token, owned_name
from .atomic import link_noclobber, replace_file
from ...errors import OperationError
from ..results import TrashBatch

MANIFEST = "manifest.json"
FILES = "files"


def trash_dir(root: str) -> str:
    return os.path.join(root, ".qconsole", "trash")


def new_batch(root: str, action: str, queue: str | None, layout: str, user: str) -> str:
    """Create a batch directory and its manifest; OperationError when the trash is not writable."""
    base = trash_dir(root)
    now = time.time()
    batch = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + "-" + secrets.token_hex(3)
    try:
        os.makedirs(os.path.join(base, batch, FILES))
    except OSError as err:
        raise OperationError(
            f"cannot create the trash in {base}: {err.strerror} (use --no-trash to delete for real)"
        ) from None
    write_manifest(root, batch, {"batch": batch, "created_at": now, "action": action, "queue": queue,
                                 "layout": layout, "user": user, "complete": False, "items": []})
    return batch


def write_manifest(root: str, batch: str, doc: dict[str, Any]) -> None:
    path = os.path.join(trash_dir(root), batch, MANIFEST)
    # the temp name is a qconsole-owned one, so `recover` removes it after a kill
    replace_file(path, json.dumps(doc, indent=1).encode(), owned_name(CFG, new_token()))


def read_manifest(root: str, batch: str) -> dict[str, Any]:
    try:
        with open(os.path.join(trash_dir(root), batch, MANIFEST), "rb") as fh:
            doc = json.load(fh)
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def trash_path(root: str, batch: str, queue: str, relpath: str) -> str:
    return os.path.join(trash_dir(root), batch, FILES, queue, relpath)


def prepare_queue(root: str, batch: str, queue: str) -> None:
    os.makedirs(os.path.join(trash_dir(root), batch, FILES, queue, "work"), exist_ok=True)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:  # as os.path.isfile: False
        return False


def _files(root: str, batch: str) -> list[tuple[str, str]]:
    """(queue, relpath) of every file in a batch."""
    out = []
    top = os.path.join(trash_dir(root), batch, FILES)
    try:
        queues = sorted(os.listdir(top))
    except OSError:
        return out
    for q in queues:
        for sub in ("", "work"):
            d = os.path.join(top, q, sub)
            try:
                # the entry's own type (a stat only where the listing has none, or for a link,
                # as os.path.isfile would follow it): no stat per trashed file
                with os.scandir(d) as it:
                    names = sorted(e.name for e in it if _is_file(e))
            except OSError:
                continue
            for n in names:
                out.append((q, f"{sub}/{n}" if sub else n))
    return out


def list_batches(root: str) -> list[TrashBatch]:
    base = trash_dir(root)
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for b in names:
        if not os.path.isdir(os.path.join(base, b)):
            continue
        doc = read_manifest(root, b)
        files = _files(root, b)
        created = doc.get("created_at")
        if not isinstance(created, (int, float)):
            try:
                created = os.lstat(os.path.join(base, b)).st_mtime
            except OSError:
                created = 0.0
        out.append(TrashBatch(b, float(created), str(doc.get("action", "?")), doc.get("queue"),
                              len(files), str(doc.get("user", "")), [r for _q, r in files]))
    return out


def restore(root: str, batch: str, ready_name: Callable[[str], str | None],
            tick: Callable[[int, int], None] | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """Move a batch back: (restored relpaths, [(relpath, reason)]). ``ready_name``: the layout's
    ready name for a trashed relpath (None: not a message name); ``tick(done, total)``: progress."""
    done: list[str] = []
    skipped: list[tuple[str, str]] = []
    files = _files(root, batch)
    for queue, rel in files:
        if tick is not None:
            tick(len(done) + len(skipped), len(files))
        qdir = os.path.join(root, queue)
        target = ready_name(rel)
        if target is None:
            skipped.append((rel, "not a message name"))
            continue
        if not os.path.isdir(qdir) or os.path.islink(qdir):
            skipped.append((rel, f"queue {queue!r} is gone"))
            continue
        if link_noclobber(trash_path(root, batch, queue, rel), os.path.join(qdir, target)):
            done.append(f"{queue}/{target}")
        else:
            skipped.append((rel, "a file of that name exists"))
    if not skipped:
        shutil.rmtree(os.path.join(trash_dir(root), batch), ignore_errors=True)
    return done, skipped


def empty(root: str, older_than_s: float | None) -> list[str]:
    now = time.time()
    removed = []
    for b in list_batches(root):
        if older_than_s is not None and now - b.created_at < older_than_s:
            continue
        shutil.rmtree(os.path.join(trash_dir(root), b.batch), ignore_errors=True)
        if not os.path.exists(os.path.join(trash_dir(root), b.batch)):
            removed.append(b.batch)
        else:
            raise OperationError(f"cannot remove trash batch {b.batch}")
    return removed


def require_batch(root: str, batch: str | None) -> str:
    batches = list_batches(root)
    if not batches:
        raise OperationError("the trash is empty")
    if batch is None:
        return max(batches, key=lambda b: (b.created_at, b.batch)).batch
    if "/" in batch or batch.startswith(".") or batch not in {b.batch for b in batches}:
        raise OperationError(f"no trash batch {batch!r} (see qconsole trash list)")
    return batch
