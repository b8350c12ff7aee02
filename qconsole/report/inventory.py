"""The report's inventory, store-neutral: chunk descriptors in, Arrow record batches out.

The executors do two things per store, and only these two need to know the store:

* ``list_chunks(store, location, queue, now, size)`` lists one queue once and yields **chunk
  descriptors**: plain picklable dicts ``{"store", "location", "queue", "now", "seq",
  "files", "items"}`` where ``items`` is whatever that store's reader needs (file names for
  the file layouts; a Redis backend would put rank ranges there);
* ``read_chunk(chunk)`` turns one descriptor into the inventory columns (COLUMNS order,
  times as integer µs).

``Backend.report_module`` names the module providing both for each store (the file layouts:
:mod:`qconsole.backends.fs.report_chunks`). Everything else here -- Arrow schema, batches, the Spark task
functions (listing, reading + writing + summarising, counting duplicate payloads by hash
bucket), the pure-Python pass -- works for any store. No PySpark or pyarrow import at
module level: tests and the Python pass use it without them.
"""

from __future__ import annotations

import importlib
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

#: Inventory columns in order, with a type word the Spark job maps to a Spark type.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("queue", "string"),
    ("layout", "string"),  # the store: vsqs | ddmq
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

#: messages per chunk: the unit spread across the read tasks
CHUNK = 2000
#: rows buffered per Parquet row group by the executors' writer
ROW_GROUP = 64 * 1024


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def store_module(store: str) -> Any:
    """The module that lists and reads ``store`` (``Backend.report_module``: ``list_chunks``,
    ``read_chunk``, ``REDELIVERY_FIELD``, ``RECORDS_SENDER``), imported on first use, on the executor."""
    from ..backends import backend_class

    try:
        return importlib.import_module(backend_class(store).report_module)
    except (KeyError, ValueError):
        raise ValueError(f"no report reader for store {store!r}") from None


def list_chunks(store: str, location: str, queue: str, now: float, size: int = CHUNK) -> Iterator[dict[str, Any]]:
    """The chunk descriptors of one queue (listed once, by the store's own lister)."""
    return store_module(store).list_chunks(store, location, queue, now, size)


def read_chunk(chunk: dict[str, Any]) -> list[list[Any]]:
    """The inventory columns of one chunk descriptor (reads the store)."""
    return store_module(chunk["store"]).read_chunk(chunk)


def location_of(store: str, text: str, backend: Any) -> str:
    """What the executors are given to reach the store: the module's ``report_location(text,
    backend)`` when it has one (RSMQ: the URL without its password), else the backend's path."""
    fn = getattr(store_module(store), "report_location", None)
    return fn(text, backend) if fn is not None else backend.path


def redelivery_field(store: str) -> str | None:
    """The inventory column that counts redeliveries in this store, or None if it records none."""
    return store_module(store).REDELIVERY_FIELD.get(store)


def records_sender(store: str) -> bool:
    return bool(store_module(store).RECORDS_SENDER.get(store))


# -- Arrow --------------------------------------------------------------------------------


def arrow_schema() -> Any:
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64(), "timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema([pa.field(n, kinds[t]) for n, t in COLUMNS])


def record_batch(columns: Sequence[Sequence[Any]], schema: Any = None) -> Any:
    """One Arrow record batch from inventory columns (times in integer µs)."""
    import pyarrow as pa

    schema = schema or arrow_schema()
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


def keyed_chunks(specs: Iterable[tuple[str, str, str, float]], partitions: int, counters: Any = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """Listing stage (a Spark task): ``(read partition, chunk descriptor)`` for every chunk of
    the given ``(store, location, queue, now)`` specs; a queue's chunks are dealt round-robin
    from a stable per-queue offset, so one dominant queue is read by every partition."""
    for store, location, queue, now in specs:
        offset = zlib.crc32(queue.encode("utf-8", "surrogateescape"))
        files = 0
        for n, chunk in enumerate(list_chunks(store, location, queue, now)):
            files += chunk["files"]
            yield (offset + n) % partitions, chunk
        if counters is not None:  # progress: seen by the driver as each task finishes
            counters[0].add(1)
            counters[1].add(files)


class Summarise:
    """What a read task needs to summarise the rows it reads (plain data, pickled to the tasks):
    the reference time, the poison threshold, the store's redelivery column and the number of
    hash buckets the duplicate payloads are counted in."""

    def __init__(self, now: float, threshold: int, redelivery: str | None, buckets: int) -> None:
        self.now, self.threshold, self.redelivery, self.buckets = now, threshold, redelivery, buckets


_IX = {name: i for i, name in enumerate(COLUMN_NAMES)}
_HEX = "0123456789abcdef"


class _PartitionSummary:
    """A read task's share of the summaries: a QueuePartial per queue, and its messages' payload
    hashes dealt into ``buckets`` by their first hex digit (one hash always goes to one bucket)."""

    def __init__(self, spec: Summarise) -> None:
        self.spec = spec
        self.partials: dict[str, Any] = {}
        self.fields: dict[str, str | None] = {}
        self.hashes: dict[str, dict[str, list[str]]] = {}  # queue -> first hex digit -> hex digests

    def add(self, cols: Sequence[Sequence[Any]]) -> None:
        from . import summary

        if not cols[0]:
            return
        self.fields.setdefault(cols[0][0], self.spec.redelivery)
        summary.add_chunk(self.partials, self._hashes, cols, _IX, self.fields, self.spec.now, self.spec.threshold)

    def _hashes(self, queue: str, digests: list[str]) -> None:
        route = self.hashes.get(queue)
        if route is None:
            route = self.hashes[queue] = {c: [] for c in _HEX}
        for h in digests:
            route[h[0]].append(h)

    def records(self) -> Iterator[tuple[int, tuple]]:
        """``(bucket, ("h", queue, 32-byte digests end to end))`` records for the shuffle."""
        b = self.spec.buckets
        for queue, route in self.hashes.items():
            per_bucket: dict[int, list[str]] = {}
            for c, hexes in route.items():
                if hexes:
                    per_bucket.setdefault(int(c, 16) % b, []).extend(hexes)
            for bucket, hexes in per_bucket.items():
                yield bucket, ("h", queue, bytes.fromhex("".join(hexes)))


def batches_of(chunks: Iterable[dict[str, Any]], counters: Any = None, summary: _PartitionSummary | None = None) -> Iterator[Any]:
    """Reading: one Arrow record batch per chunk descriptor (summarised on the way when asked)."""
    schema = arrow_schema()
    for chunk in chunks:
        cols = read_chunk(chunk)
        if summary is not None:
            summary.add(cols)
        if counters is not None:
            counters[2].add(len(cols[0]))
        yield record_batch(cols, schema)


def write_partition(
    index: int, items: Iterable[tuple[int, dict[str, Any]]], out_dir: str, counters: Any = None,
    summarise: Summarise | None = None,
) -> Iterator[Any]:
    """Reading stage (a Spark task): read this partition's chunks into Arrow batches and write
    them as ONE Parquet file with pyarrow -- no row crosses into the JVM or gets pickled.

    Written under a dot name (Parquet readers skip those) and renamed into place, named by the
    partition, so a retried task replaces its own file and never adds a second one.
    Yields ``(file, rows)`` for the driver; with ``summarise``, ``(bucket, ("m", file, rows,
    partials))`` instead, then the payload hashes keyed by bucket (see count_duplicates).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    attempt = 0
    try:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        attempt = ctx.attemptNumber() if ctx is not None else 0
    except ImportError:  # the pure-Python pass calls this without Spark
        pass
    final = os.path.join(out_dir, f"part-{index:05d}.parquet")
    tmp = os.path.join(out_dir, f".part-{index:05d}-{attempt}.parquet.tmp")
    schema = arrow_schema()
    rows = 0
    pending: list[Any] = []
    buffered = 0
    part = _PartitionSummary(summarise) if summarise is not None else None
    writer = pq.ParquetWriter(tmp, schema)
    try:
        for batch in batches_of((chunk for _key, chunk in items), counters, part):
            pending.append(batch)
            buffered += batch.num_rows
            if buffered >= ROW_GROUP:  # row groups of ~64k rows, not one per 2000-row chunk
                writer.write_table(pa.Table.from_batches(pending, schema))
                rows += buffered
                pending, buffered = [], 0
        if pending or not rows:  # an empty partition still writes an (empty) file
            writer.write_table(pa.Table.from_batches(pending, schema))
            rows += buffered
        writer.close()
        os.replace(tmp, final)
    finally:
        writer.close()
        if os.path.exists(tmp):
            os.unlink(tmp)
    if part is None:
        yield final, rows
        return
    yield index % summarise.buckets, ("m", final, rows, part.partials)
    yield from part.records()


def count_duplicates(items: Iterable[tuple[int, tuple]]) -> Iterator[tuple]:
    """Duplicate stage (a Spark task, one hash bucket): count the copies of every payload hash
    dealt to this bucket; passes the read tasks' ``("m", ...)`` records through and yields one
    ``("d", {queue: (messages, payloads, top)})`` -- mergeable, as no hash is in two buckets."""
    from .summary import DuplicateCounter

    dups = DuplicateCounter()
    for _bucket, rec in items:
        if rec[0] == "h":
            dups.add_blob(rec[1], rec[2])
        else:
            yield rec
    yield ("d", dups.result())


# -- the pure-Python pass (benchmark baseline, tests) ---------------------------------------


def scan_root_columns(store: str, location: str, queues: Iterable[str], now: float) -> Iterator[list[list[Any]]]:
    """Every chunk's columns, listed and read in this one process."""
    for q in queues:
        for chunk in list_chunks(store, location, q, now):
            yield read_chunk(chunk)


def _dt(us: int | None) -> datetime | None:
    return None if us is None else _EPOCH + timedelta(microseconds=us)


def rows_of(columns: Sequence[Sequence[Any]]) -> list[tuple]:
    """Row tuples (times as UTC datetimes, as Spark returns them) of one chunk's columns."""
    ci, ei = COLUMN_NAMES.index("created_at"), COLUMN_NAMES.index("expires_at")
    out = []
    for row in zip(*columns):
        row = list(row)
        row[ci], row[ei] = _dt(row[ci]), _dt(row[ei])
        out.append(tuple(row))
    return out


def scan_root_rows(root: str, layout: str, queues: Iterable[str], now: float) -> list[tuple]:
    """The whole inventory as rows in this process (tests; the driver never does this)."""
    rows: list[tuple] = []
    for cols in scan_root_columns(layout, root, queues, now):
        rows.extend(rows_of(cols))
    return rows
