"""The file layouts' share of the report inventory (VSQS, ddmq): list a queue into chunks,
read a chunk's files into columns.

Everything here knows the on-disk layout; :mod:`qconsole.report.inventory` around it does
not. A backend names its module in ``Backend.report_module``; a Redis backend provides the
same two functions, ``list_chunks`` and ``read_chunk``, for its own store.
Plain Python (stdlib + the core's scanners): it runs inside Spark tasks.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

from ..ddmq import body as ddmq_body
from ..ddmq import layout as ddmq
from ...errors import QConsoleError
from ...payload import BINARY, classify
from . import listing as common
from .atomic import read_file_bytes
from .detect import module_for
from ..vsqs import layout as vsqs
from ...states import DDMQ, FOREIGN, WRITING

#: the stores this module reads
STORES: tuple[str, ...] = ("vsqs", "ddmq")
#: Files larger than this are listed but not read (no hash, no ddmq fields).
MAX_READ = 64 * 1024 * 1024
#: Longest integer Parquet's int64 holds; longer digit strings become null.
_INT64_MAX = 2**63 - 1
#: what each layout records as "delivered again": ddmq counts requeues in the message JSON;
#: vsqs records nothing (a requeued file is renamed back, no counter).
REDELIVERY_FIELD: dict[str, str | None] = {"ddmq": "requeue_counter", "vsqs": None}
#: neither layout writes who sent a message
RECORDS_SENDER: dict[str, bool] = {"ddmq": False, "vsqs": False}


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if -_INT64_MAX <= value <= _INT64_MAX else None


def _us(epoch: float | None) -> int | None:
    """Epoch seconds -> integer microseconds: the inventory's time unit (Arrow/Parquet/Spark)."""
    return None if epoch is None else round(epoch * 1_000_000)


def other_row(queue: str, layout: str, state: str | None, relpath: str, error: str | None) -> tuple:
    """An inventory row (COLUMNS order) for a file that is not a message, or an unlistable queue."""
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
                yield other_row(queue, layout, WRITING, rel, None)
            elif parse(name) is not None and regular:
                continue
            else:
                why = "not a regular file" if parse(name) is not None else f"not a {layout} message name"
                yield other_row(queue, layout, FOREIGN, rel, f"foreign file: {why}")


def _has_leftovers(scan: Any, cols: Any) -> bool:
    """Whether the scan counted files that are not messages (foreign, or qconsole temp files:
    the ``writing`` count minus the writing messages it listed)."""
    listed_writing = cols.state.count(WRITING) if cols is not None and scan.counts[WRITING] else 0
    return bool(scan.counts[FOREIGN] or scan.counts[WRITING] - listed_writing)


def list_chunks(store: str, location: str, queue: str, now: float, size: int) -> Iterator[dict[str, Any]]:
    """List one queue once with the core's scanner and cut it into chunk descriptors.

    Message chunks carry the scanner's fields as columns (``msgs``: ids, states, relpaths,
    priorities, created and deadlines in epoch seconds), at most ``size`` messages each, so a
    dominant queue is read by many tasks; a last ``rows`` chunk holds the files that are not
    messages (temp, foreign) or the one row of a queue that could not be listed. The scanner
    collects columns (``collect="columns"``): no Message object per file and no sort in this
    one listing task; the per-value conversions happen in read_chunk, spread over the read tasks.
    """
    scan = module_for(store).scan_queue(location, queue, now, collect="columns")
    cols = scan.messages
    n = len(cols) if cols is not None else 0
    fields = (cols.id, cols.state, cols.relpath, cols.priority, cols.created_at, cols.deadline) if n else ()
    seq = 0
    for start in range(0, n, size):
        yield {"store": store, "location": location, "queue": queue, "now": now, "seq": seq,
               "files": min(size, n - start), "items": {"msgs": tuple(c[start : start + size] for c in fields)}}
        seq += 1
    if scan.errors and scan.errors[0].startswith("cannot read") and not n:
        # the queue directory itself could not be listed: one row says so
        rows = [other_row(queue, store, None, ".", scan.errors[0])]
    elif _has_leftovers(scan, cols):
        rows = list(_leftover_rows(location, store, queue, set(cols.relpath) if n else set()))
    else:  # the scan counted no temp or foreign file: no second listing
        rows = []
    if rows:
        yield {"store": store, "location": location, "queue": queue, "now": now, "seq": seq,
               "files": len(rows), "items": {"rows": rows}}


def _ddmq_body(data: bytes) -> tuple[bytes | None, int | None, str | None]:
    """(payload bytes, requeue_counter, error) of one ddmq message file's content."""
    doc = ddmq_body.parse(data)
    if doc is None or "message" not in doc:
        return None, None, "not a complete ddmq JSON message (half-written or corrupt)"
    return ddmq_body.message_bytes(doc), _int_or_none(doc.get("requeue_counter")), None


def read_chunk(chunk: dict[str, Any]) -> list[list[Any]]:
    """The inventory columns (COLUMNS order, times in µs) of one chunk: reads its files once.

    Nothing raises for a bad file: it becomes a row with an ``error`` (gone since the
    listing, not a regular file, corrupt ddmq JSON, binary payload, too large).
    """
    items = chunk["items"]
    if "rows" in items:
        rows = items["rows"]
        return [list(col) for col in zip(*rows)] if rows else [[] for _ in range(14)]
    ids, states, relpaths, prios, created, deadlines = items["msgs"]
    queue, layout = chunk["queue"], chunk["store"]
    qdir = os.path.join(chunk["location"], queue)
    is_ddmq = layout == DDMQ
    sizes: list[int | None] = []
    file_sizes: list[int | None] = []
    requeues: list[int | None] = []
    kinds: list[str | None] = []
    digests: list[str | None] = []
    errors: list[str | None] = []
    sha256 = hashlib.sha256
    join = os.path.join
    for relpath in relpaths:
        size = file_bytes = requeue = kind = digest = error = None
        try:
            data, file_bytes = read_file_bytes(join(qdir, relpath), MAX_READ)
        except QConsoleError as err:
            error = str(err)
            data = None
        if data is not None and file_bytes > MAX_READ:
            error = f"{file_bytes} bytes: larger than {MAX_READ} bytes, not read"
            data = None
        if data is not None:
            body: bytes | None = data
            if is_ddmq:
                body, requeue, error = _ddmq_body(data)
            if body is not None:
                size = len(body)
                kind = classify(body)
                digest = sha256(body).hexdigest()
                if kind == BINARY:
                    error = "binary payload"
        sizes.append(size)
        file_sizes.append(file_bytes)
        requeues.append(requeue)
        kinds.append(kind)
        digests.append(digest)
        errors.append(error)
    n = len(relpaths)
    return [
        [queue] * n, [layout] * n, list(states), list(ids), list(relpaths), list(map(_int_or_none, prios)),
        list(map(_us, created)), list(map(_us, deadlines)), sizes, file_sizes, requeues, kinds, digests, errors,
    ]
