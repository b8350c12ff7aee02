"""The per-queue inventory scanner: plain Python, run inside Spark tasks (or alone).

One row per file of a queue: every message the core's scanner finds (names parsed by
``qconsole.layouts``, content read with ``qconsole.payload.read_file_bytes``), plus one row per
qconsole temp file (``writing``) and per foreign file, so that counts by state over the rows
equal ``Root.scan()``'s counts. Nothing here raises for a bad file: it becomes a row with an
``error``. No PySpark import: the Spark job ships these functions to its executors.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

from ..errors import QConsoleError
from ..backends.ddmq import layout as ddmq
from ..backends.fs import listing as common
from ..backends.fs.atomic import read_file_bytes
from ..backends.fs.detect import module_for
from ..backends.vsqs import layout as vsqs
from ..model import Message
from ..payload import BINARY, classify
from ..states import DDMQ, FOREIGN, WRITING

#: Files larger than this are listed but not read (no hash, no ddmq fields).
MAX_READ = 64 * 1024 * 1024
#: Longest integer Parquet's int64 holds; longer digit strings become null.
_INT64_MAX = 2**63 - 1

#: Inventory columns in order, with a type word the Spark job maps to a Spark type.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("queue", "string"),
    ("layout", "string"),
    ("state", "string"),  # one of STATES; null for a queue that could not be listed
    ("id", "string"),
    ("file", "string"),  # path relative to the queue directory
    ("priority", "long"),
    ("created_at", "timestamp"),
    ("expires_at", "timestamp"),
    ("size_bytes", "long"),  # payload bytes (ddmq: the "message" field)
    ("file_bytes", "long"),  # bytes on disk
    ("requeue_counter", "long"),  # ddmq only, from the message JSON
    ("payload_kind", "string"),  # json | text | binary
    ("payload_sha256", "string"),
    ("error", "string"),
)
COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _t in COLUMNS)


def _ts(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=timezone.utc)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if -_INT64_MAX <= value <= _INT64_MAX else None


#: messages per chunk: the unit the Spark job spreads across partitions
CHUNK = 2000


def message_row(queue_dir: str, msg: Message) -> tuple:
    """The inventory row of one message: reads its file once; errors become the error column."""
    size = file_bytes = requeue = kind = digest = error = None
    try:
        data, file_bytes = read_file_bytes(os.path.join(queue_dir, msg.relpath), MAX_READ)
    except QConsoleError as err:
        error = str(err)
        data = None
    if data is not None and file_bytes is not None and file_bytes > MAX_READ:
        error = f"{file_bytes} bytes: larger than {MAX_READ} bytes, not read"
        data = None
    if data is not None:
        body: bytes | None = data
        if msg.layout == DDMQ:
            body = None
            try:
                doc = json.loads(data)
            except (ValueError, RecursionError):
                doc = None
            if isinstance(doc, dict) and "message" in doc:
                message = doc["message"]
                if isinstance(message, str):
                    body = message.encode("utf-8", errors="surrogatepass")
                else:  # a producer published a non-string: hash its JSON form
                    body = json.dumps(message).encode()
                requeue = _int_or_none(doc.get("requeue_counter"))
            else:
                error = "not a complete ddmq JSON message (half-written or corrupt)"
        if body is not None:
            size = len(body)
            kind = classify(body)
            digest = hashlib.sha256(body).hexdigest()
            if kind == BINARY:
                error = "binary payload"
    return (
        msg.queue, msg.layout, msg.state, msg.id, msg.relpath, _int_or_none(msg.priority),
        _ts(msg.created_at), _ts(msg.deadline), size, file_bytes, requeue, kind, digest, error,
    )


def _other_row(queue: str, layout: str, state: str | None, relpath: str, error: str | None) -> tuple:
    return (queue, layout, state, None, relpath, None, None, None, None, None, None, None, None, error)


def _leftover_rows(root: str, layout: str, queue: str, known: set[str]) -> Iterator[tuple]:
    """Rows for the files the core's scanner counts but does not list: qconsole temp files
    (``writing``) and foreign files. A name that parses but is not among the messages is the
    second name of one message seen mid-rename, which the scanner counts once: skipped here too."""
    qdir = os.path.join(root, queue)
    if layout == DDMQ:
        listings = [("", ddmq.parse_waiting), (ddmq.WORK + "/", ddmq.parse_work)]
    else:
        listings = [("", vsqs.parse_name)]
    for prefix, parse in listings:
        try:
            entries = list(common.list_entries(os.path.join(qdir, prefix)))
        except OSError:
            continue  # the scanner reported it already
        for name, regular in entries:
            rel = prefix + name
            if rel in known or (layout == DDMQ and not prefix and name in ddmq._QUEUE_FILES):
                continue
            if name.startswith(common.QC_TEMP_PREFIX):
                yield _other_row(queue, layout, WRITING, rel, None)
            elif parse(name) is not None and regular:
                continue
            else:
                why = "not a regular file" if parse(name) is not None else f"not a {layout} message name"
                yield _other_row(queue, layout, FOREIGN, rel, f"foreign file: {why}")


def queue_chunks(root: str, layout: str, queue: str, now: float, chunk: int = CHUNK) -> Iterator[tuple]:
    """List one queue once with the core's scanner and cut it into chunks to read.

    Yields ``("read", root, layout, queue, [message fields...])`` chunks of at most ``chunk``
    messages (so a dominant queue is read by many tasks) and one ``("rows", [rows])`` for the
    files that are not messages (temp, foreign) or a queue that could not be listed.
    """
    module = module_for(layout)
    scan = module.scan_queue(root, queue, now, collect=True)
    messages = scan.messages or []
    for start in range(0, len(messages), chunk):
        part = messages[start : start + chunk]
        fields = [(m.id, m.state, m.relpath, m.priority, m.created_at, m.deadline) for m in part]
        yield ("read", root, layout, queue, fields)
    if scan.errors and scan.errors[0].startswith("cannot read") and not messages:
        # the queue directory itself could not be listed: one row says so
        yield ("rows", [_other_row(queue, layout, None, ".", scan.errors[0])])
        return
    others = list(_leftover_rows(root, layout, queue, {m.relpath for m in messages}))
    if others:
        yield ("rows", others)


def chunk_rows(chunk: tuple) -> Iterator[tuple]:
    """The inventory rows of one chunk from :func:`queue_chunks` (reads the message files)."""
    if chunk[0] == "rows":
        yield from chunk[1]
        return
    _kind, root, layout, queue, fields = chunk
    qdir = os.path.join(root, queue)
    for mid, state, relpath, priority, created, deadline in fields:
        msg = Message(queue, layout, mid, state, relpath, priority, None, created, deadline)
        yield message_row(qdir, msg)


def keyed_chunks(queues: Iterable[tuple[str, str, str, float]], partitions: int) -> Iterator[tuple[int, tuple]]:
    """flatMap side of the job: ``(partition, chunk)`` for every chunk of the given queues,
    a queue's chunks dealt round-robin from a stable per-queue offset."""
    for root, layout, queue, now in queues:
        offset = zlib.crc32(queue.encode("utf-8", "surrogateescape"))
        for n, chunk in enumerate(queue_chunks(root, layout, queue, now)):
            yield (offset + n) % partitions, chunk


def rows_of_partition(items: Iterable[tuple[int, tuple]]) -> Iterator[tuple]:
    """mapPartitions side of the job: read every chunk that landed in this partition."""
    for _key, chunk in items:
        yield from chunk_rows(chunk)


def scan_root_rows(root: str, layout: str, queues: Iterable[str], now: float) -> list[tuple]:
    """The whole inventory in this process (the pure-Python pass: benchmark and tests)."""
    rows: list[tuple] = []
    for q in queues:
        for chunk in queue_chunks(root, layout, q, now):
            rows.extend(chunk_rows(chunk))
    return rows
