"""Local mode: list the root in a helper process while the JVM starts, into a spool of chunks.

``qconsole report`` on ``local[N]`` starts this before the Spark session: a separate Python
process (``python -m qconsole.report.spool``) lists every queue with the store's own
``list_chunks`` -- exactly what the listing tasks do on a cluster -- and writes each chunk
descriptor as a JSON file into a fresh directory under ``--out``; an ``index.json`` written
last (temp name + rename) says what is there. The JVM's start-up (seconds, mostly one core)
and the listing then overlap, and the inventory job has no listing stage and no shuffle of
descriptors: its read tasks open their chunks from the spool. The driver holds only the
index (queue, file count and name per chunk), never the file names.

The spool is data, never code (JSON, not pickle), and a read task trusts nothing in it: it
opens the files without following links, bounded, regular files only, checks that a chunk
belongs to the expected store, location and queue, and refuses relative paths that leave the
queue directory. Plain Python (stdlib); it runs in the helper process and in Spark tasks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import QConsoleError

INDEX = "index.json"
#: the stores listed this way: the file layouts (an RSMQ listing is one ZCARD per queue)
STORES = ("vsqs", "ddmq")
#: a chunk file larger than this is not ours (2 000 names are ~0.3 MB)
MAX_CHUNK_BYTES = 256 * 1024 * 1024
MAX_INDEX_BYTES = 256 * 1024 * 1024


def _write_new(path: str, text: str) -> None:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_spool(store: str, location: str, queues: Sequence[str], now: float, spool_dir: str, size: int | None = None) -> dict[str, Any]:
    """List every queue into ``spool_dir`` (which must exist, empty); returns the index."""
    from . import inventory

    size = size or inventory.CHUNK
    started = time.monotonic()
    chunks: list[list[Any]] = []
    files: dict[str, int] = {}
    for queue in queues:
        n = 0
        for chunk in inventory.list_chunks(store, location, queue, now, size):
            name = f"chunk-{len(chunks):06d}.json"
            _write_new(os.path.join(spool_dir, name), json.dumps(chunk, separators=(",", ":")))
            chunks.append([queue, chunk["files"], name])
            n += chunk["files"]
        files[queue] = n
    index = {"store": store, "location": location, "now": now, "chunks": chunks, "files": files,
             "seconds": time.monotonic() - started}
    tmp = os.path.join(spool_dir, ".index.tmp")
    _write_new(tmp, json.dumps(index))
    os.replace(tmp, os.path.join(spool_dir, INDEX))
    return index


def _read_json(path: str, limit: int) -> Any:
    from ..backends.fs.atomic import read_file_bytes

    data, size = read_file_bytes(path, limit)
    if size > limit:
        raise QConsoleError(f"{os.path.basename(path)}: {size} bytes, not a listing chunk")
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        raise QConsoleError(f"{os.path.basename(path)}: not a listing chunk (bad JSON)") from None


def _safe_relpath(rel: Any) -> bool:
    return (isinstance(rel, str) and rel != "" and not rel.startswith("/") and "\0" not in rel
            and ".." not in rel.split("/"))


def load_chunk(spool_dir: str, name: str, store: str, location: str, queue: str) -> dict[str, Any]:
    """One chunk descriptor from the spool, checked: it must be the expected store, location and
    queue's, and name only files inside that queue's directory."""
    if "/" in name or not name.startswith("chunk-") or not name.endswith(".json"):
        raise QConsoleError(f"{name}: not a listing chunk name")
    chunk = _read_json(os.path.join(spool_dir, name), MAX_CHUNK_BYTES)
    if not isinstance(chunk, dict) or (chunk.get("store"), chunk.get("location"), chunk.get("queue")) != (store, location, queue):
        raise QConsoleError(f"{name}: not a chunk of queue {queue!r}")
    items = chunk.get("items")
    if not isinstance(items, dict):
        raise QConsoleError(f"{name}: not a listing chunk")
    cols = items.get("msgs")
    if cols is not None:
        if not (isinstance(cols, list) and len(cols) == 6 and all(isinstance(c, list) for c in cols)
                and len({len(c) for c in cols}) == 1):
            raise QConsoleError(f"{name}: not a listing chunk")
        if not all(map(_safe_relpath, cols[2])):
            raise QConsoleError(f"{name}: a file name outside the queue directory")
    rows = items.get("rows")
    if rows is not None and not (isinstance(rows, list) and all(isinstance(r, list) and len(r) == 14 for r in rows)
                                 and all(_safe_relpath(r[4]) for r in rows)):
        raise QConsoleError(f"{name}: not a listing chunk")
    return chunk


def spooled_chunks(groups: Iterator[list[list[Any]]], spool_dir: str, store: str, location: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """What a read task reads: ``(0, chunk)`` for each ``[queue, files, name]`` it was dealt."""
    for group in groups:
        for queue, _files, name in group:
            yield 0, load_chunk(spool_dir, name, store, location, queue)


def deal(index: dict[str, Any], partitions: int) -> list[list[list[Any]]]:
    """The index's chunks dealt over ``partitions`` read tasks, each queue round-robin from a
    stable per-queue offset (as keyed_chunks deals them), so one big queue is read by every task."""
    import zlib

    out: list[list[list[Any]]] = [[] for _ in range(partitions)]
    seen: dict[str, int] = {}
    for queue, files, name in index["chunks"]:
        n = seen.get(queue, 0)
        seen[queue] = n + 1
        offset = zlib.crc32(queue.encode("utf-8", "surrogateescape"))
        out[(offset + n) % partitions].append([queue, files, name])
    return out


class SpoolListing:
    """The helper process listing into a spool; :meth:`index` waits for it."""

    def __init__(self, store: str, location: str, queues: Sequence[str], now: float, out_dir: str) -> None:
        os.makedirs(out_dir, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=".qconsole-listing-", dir=out_dir)
        self.started = time.monotonic()
        args = os.path.join(self.dir, ".args.json")
        _write_new(args, json.dumps({"store": store, "location": location, "queues": list(queues), "now": now}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "qconsole.report.spool", self.dir], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": _package_parent() + os.pathsep + os.environ.get("PYTHONPATH", "")},
        )

    def index(self) -> dict[str, Any]:
        """The index once the helper is done; QConsoleError with its last line if it failed."""
        _out, err = self.proc.communicate()
        if self.proc.returncode != 0:
            lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
            raise QConsoleError(f"listing failed: {lines[-1] if lines else 'exit status %d' % self.proc.returncode}")
        index = _read_json(os.path.join(self.dir, INDEX), MAX_INDEX_BYTES)
        index["waited"] = time.monotonic() - self.started
        return index

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _package_parent() -> str:
    import qconsole

    return os.path.dirname(os.path.dirname(os.path.abspath(qconsole.__file__)))


def main() -> None:
    spool_dir = sys.argv[1]
    args = _read_json(os.path.join(spool_dir, ".args.json"), MAX_INDEX_BYTES)
    write_spool(args["store"], args["location"], args["queues"], float(args["now"]), spool_dir)


if __name__ == "__main__":
    main()
