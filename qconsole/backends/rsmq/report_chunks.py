"""RSMQ's share of the report inventory (:mod:`qconsole.report.inventory`): a queue's sorted
set cut into rank ranges on the driver, each range read on an executor.

* :func:`list_chunks` asks ZCARD once and yields chunk descriptors of ``[start, stop]`` rank
  ranges: plain picklable dicts, the target in them without a password (see
  :func:`report_location`); nothing else is read on the driver, so a 10M-message namespace
  spreads over the cluster.
* :func:`read_chunk` runs on an executor: ZRANGE of its ranks WITHSCORES, then HMGET of each
  member's body, ``:rc`` and ``:fr`` (pipelined, a few hundred members a command, so no single
  call holds the server long), and returns the inventory's columns.

The state of each message is judged as the backend's counting judges it (score against the one
``now`` of the report, Redis TIME on the driver). The redelivery measure is the receive count
``rc``, carried in the inventory's ``requeue_counter`` column: ``rc > 1`` means delivered again,
and ``--poison-threshold N`` lists messages received N times or more. RSMQ records no sender.

A live namespace moves between listing and reading (ranks shift as consumers delete): a chunk
reads the ranks it was given, so under load the inventory is a close sample of the moment,
not a transaction -- the same as a listing of a live directory is.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ...payload import BINARY, classify
from ...states import DELAYED, EXPIRED, FOREIGN, INFLIGHT, READY

#: the stores this module reads
STORES: tuple[str, ...] = ("rsmq",)
#: RSMQ counts receives per message (``{id}:rc``), carried in the inventory's requeue_counter
REDELIVERY_FIELD: dict[str, str | None] = {"rsmq": "requeue_counter"}
#: rsmq messages carry no sender
RECORDS_SENDER: dict[str, bool] = {"rsmq": False}
#: members whose bodies one HMGET fetches (3 fields each; bodies are at most 64 KiB)
READ_STEP = 200

#: one connection per executor process and target (Python workers are reused between tasks)
_CLIENTS: dict[str, Any] = {}


def report_location(text: str, backend: Any = None) -> str:
    """The target as the executors get it: the URL the operator typed with any password taken
    out of it (its other parameters -- ns, db, ca, password_file -- kept). When the password
    was in the URL it is put in ``$REDISCLI_AUTH`` of this process, which local executors
    inherit; on a cluster give it by ``?password_file=`` on a shared path or the executors'
    ``$REDISCLI_AUTH`` (``spark.executorEnv.REDISCLI_AUTH``)."""
    from urllib.parse import unquote

    parts = urlsplit(text)
    netloc = parts.netloc
    if parts.password is not None:
        user, _sep, host = netloc.rpartition("@")
        name = user.partition(":")[0]
        os.environ["REDISCLI_AUTH"] = unquote(parts.password)  # as the URL said: it wins here too
        netloc = (f"{name}@" if name else "") + host
    elif parts.username and "password_file=" not in parts.query and not os.environ.get("REDISCLI_AUTH"):
        # redis://NAME@host: NAME is the password (as redis-cli and target.parse read it)
        os.environ["REDISCLI_AUTH"] = unquote(parts.username)
        netloc = netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _backend(location: str) -> Any:
    """The RSMQ backend of ``location`` (connected once per process)."""
    backend = _CLIENTS.get(location)
    if backend is None:
        from .backend import RsmqBackend
        from .target import parse

        backend = _CLIENTS[location] = RsmqBackend(parse(location))
    return backend


def _error_row(queue: str, error: str) -> tuple:
    """The one row (COLUMNS order) of a queue or rank range that could not be read."""
    return (queue, "rsmq", None, None, ".", None, None, None, None, None, None, None, None, error)


def list_chunks(store: str, location: str, queue: str, now: float, size: int) -> Iterator[dict[str, Any]]:
    """ZCARD of the queue's sorted set, then one descriptor per ``size`` ranks. A queue whose
    keys are not of the types rsmq writes (anyone can SET them), or that cannot be read, is one
    error row, as ``stats`` makes it a per-queue error: the rest of the namespace is reported."""
    from ...errors import RootError

    backend = _backend(location)
    zkey, hkey = backend.zkey(queue), backend.hkey(queue)
    try:
        pipe = backend._pipe()
        pipe.type(zkey)
        pipe.type(hkey)
        ztype, htype = (_type(t) for t in backend._call(pipe.execute))
        if ztype not in ("zset", "none") or htype not in ("hash", "none"):
            raise RootError(f"{hkey} or {zkey} is not of the type rsmq writes; not read")
        total = int(backend._call(backend.client.zcard, zkey))
    except RootError as err:
        yield {"store": store, "location": location, "queue": queue, "now": now, "seq": 0, "files": 1,
               "items": {"rows": [_error_row(queue, str(err) or "cannot read the queue")]}}
        return
    for seq, start in enumerate(range(0, total, size)):
        stop = min(start + size, total) - 1
        yield {"store": store, "location": location, "queue": queue, "now": now, "seq": seq,
               "files": stop - start + 1, "items": {"ranks": [start, stop]}}


#: the largest microsecond count a Parquet int64 column holds
_US_MAX = (1 << 63) - 1


def _us(ms: float | None) -> int | None:
    """A score (ms) as microseconds; None for one no column can hold (±inf, or planted past
    year 292,000: the report failed on it, 'cannot convert float infinity to integer')."""
    if ms is None or ms != ms or not -_US_MAX <= ms * 1000 <= _US_MAX:
        return None
    return round(ms * 1000)


def _state(score: float, rc: int, now_ms: int) -> str:
    if score <= now_ms:
        return EXPIRED if rc else READY
    return INFLIGHT if rc else DELAYED


def _type(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_chunk(chunk: dict[str, Any]) -> list[list[Any]]:
    """The inventory columns (COLUMNS order, times in µs) of one rank range; a range whose keys
    turned unreadable since the listing (replaced by another type) is one error row."""
    from ...errors import RootError

    if "rows" in chunk["items"]:
        return [list(col) for col in zip(*chunk["items"]["rows"])]
    try:
        return _read_ranks(chunk)
    except RootError as err:
        start, stop = chunk["items"]["ranks"]
        return [[v] for v in _error_row(chunk["queue"], f"ranks {start}-{stop}: {err or 'cannot be read'}")]


def _read_ranks(chunk: dict[str, Any]) -> list[list[Any]]:
    from .backend import _rc, _s, id_time, not_an_id

    backend = _backend(chunk["location"])
    queue = chunk["queue"]
    start, stop = chunk["items"]["ranks"]
    now_ms = int(float(chunk["now"]) * 1000)
    zkey, hkey = backend.zkey(queue), backend.hkey(queue)
    members = backend._call(backend.client.zrange, zkey, start, stop, withscores=True)
    # a member named like a queue field or holding ':' is no message (its "body" would be a
    # setting or another message's field): one foreign row, as a file layout's foreign file
    foreign = [m for m, _score in members if not_an_id(m)]
    members = [ms for ms in members if not not_an_id(ms[0])]
    pipe = backend._pipe()
    for i in range(0, len(members), READ_STEP):
        pipe.hmget(hkey, [m + sfx for m, _score in members[i:i + READ_STEP] for sfx in (b"", b":rc", b":fr")])
    values: list[Any] = []
    for part in backend._call(pipe.execute) if members else ():
        values.extend(part)
    cols: list[list[Any]] = [[] for _ in range(14)]
    (c_queue, c_layout, c_state, c_id, c_file, c_prio, c_created, c_expires, c_size, c_bytes, c_rc, c_kind,
     c_sha, c_error) = cols
    sha256 = hashlib.sha256
    for n, (raw_id, score) in enumerate(members):
        body, rc_raw, _fr = values[3 * n:3 * n + 3]
        rc = _rc(rc_raw)
        state = _state(score, rc, now_ms)
        mid = _s(raw_id)
        created = id_time(mid)
        size = kind = digest = error = None
        if body is None:
            error = "gone since the listing (received and deleted meanwhile)"
        else:
            data = bytes(body)
            size = len(data)
            kind = classify(data)
            digest = sha256(data).hexdigest()
            if kind == BINARY:
                error = "binary payload"
        c_queue.append(queue)
        c_layout.append("rsmq")
        c_state.append(state)
        c_id.append(mid)
        c_file.append(mid)
        c_prio.append(None)
        c_created.append(None if created is None else round(created * 1_000_000))
        c_expires.append(None if state == READY else _us(score))
        c_size.append(size)
        c_bytes.append(size)
        c_rc.append(rc)
        c_kind.append(kind)
        c_sha.append(digest)
        c_error.append(error)
    for raw_id in foreign:
        row = (queue, "rsmq", FOREIGN, None, _s(raw_id), None, None, None, None, None, None, None, None,
               "foreign member: named like a queue field, or holding ':'")
        for col, value in zip(cols, row):
            col.append(value)
    return cols
