"""The RSMQ backend: one namespace of Redis Simple Message Queue (smrchy/rsmq and its ports).

Keys (DESIGN.md §1), namespace ``ns``: ``{ns}:QUEUES`` (set of queue names); ``{ns}:{q}:Q``
(hash: vt, delay, maxsize, created, modified, totalsent, totalrecv; per message ``{id}`` the
body, ``{id}:rc`` the receive count, ``{id}:fr`` the first receive in epoch ms); ``{ns}:{q}``
(sorted set of ids scored by the epoch ms at which each is next visible).

States, from Redis data alone with Redis TIME as now: ``ready`` (visible, never received),
``expired`` (received, its visibility timeout passed: the next receive delivers it again),
``inflight`` (received, hidden until its score), ``delayed`` (never received, hidden until its
score).

Counting reads only O(1) figures and the hidden range: ZCARD, ZCOUNT, HLEN, the settings by
HMGET, then the hidden members by rank in chunks and their receive counts by HMGET. The
visible range is split into ready and expired by its receive counts too when it is small
(:data:`EXACT_VISIBLE`), else by arithmetic on HLEN (every received message has exactly two
extra fields, ``:rc`` and ``:fr``). No KEYS, no HGETALL, no script, no MULTI: a read-only
ACL user (``+@read +time``) can count. Plain ZRANGE/HMGET chunks rather than a script that
sums each chunk on the server: measured at 1M messages, a Lua loop of HGETs costs the server
several times what one HMGET of the same fields does, and a console refreshing every 2 s must
not load a production Redis; hiredis keeps the client's side of the replies cheap.

qconsole's own keys (the trash) are ``{ns}:qconsole:trash:`` (the index) and
``{ns}:qconsole:trash:{batch}:`` (meta), ``...:m:`` (messages), ``...:o:`` (order): each ends in
``:``. An rsmq key is ``{ns}:{q}``, ``{ns}:{q}:Q`` or ``{ns}:QUEUES`` for a namespace that may
itself hold ``:`` and a queue name of 1-160 ``[A-Za-z0-9_-]`` (Node) or 1-64 of anything but
``:`` (PyRSMQ: ``!`` and ``.`` too), so no key a client can reach ends in ``:`` (its last
segment would be an empty queue name), and qconsole refuses ``:`` in a queue name itself. (Up
to 0.x the trash was ``{ns}:qconsole:trash``, the sorted set of queue ``trash`` in namespace
``{ns}:qconsole``: those keys are no longer read, and never deleted.)
"""

from __future__ import annotations

import re
import secrets
import string
import time
from operator import itemgetter

from ...errors import OperationError, QueueNameError, RootError, SettingsError, UnknownQueueError
from ...model import Message, QueueScan, RootScan
from ...states import DELAYED, EXPIRED, FOREIGN, INFLIGHT, READY, RSMQ
from ..base import (CREATE_QUEUE, DELAYED as CAP_DELAYED, DELETE_QUEUE, REDELIVERY_COUNT, SETTINGS, TRASH,
                    Backend, Option, Setting, SettingField)
from . import scripts, trash_scripts
from .target import Target, connect, describe_error, parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import Any

    from ...payload import Payload
    from ..results import TrashBatch

#: members (and receive counts) read per command: each answers in well under a millisecond
CHUNK = 1000
#: commands sent per round trip
PIPELINE = 16
#: per-message scripts a bulk change (requeue, delete, purge, move, trash restore) sends per round
#: trip: each is still one atomic script, but the client waits once per batch, not per message; a
#: batch runs on the server in a few ms, so clients beside it never wait longer than that
SCRIPT_BATCH = 256
#: a visible range up to this size is split into ready/expired by reading its receive counts;
#: a bigger one by the HLEN arithmetic (O(1))
EXACT_VISIBLE = 20_000
#: message ids of each trash batch a listing reads (a screen shows the first few)
TRASH_IDS_LISTED = 8
#: how far into the visible range counting looks for the oldest ready message
OLDEST_SCAN_LIMIT = 10 * CHUNK
#: members read a round trip by `ls --limit N` (list_head), and how many past N it reads at once
HEAD_CHUNK = 2000
HEAD_SPARE = 16
#: rsmq's bounds (Node rsmq 0.12.4 _validate; PyRSMQ allows maxsize up to 65565)
VT_MAX = DELAY_MAX = 9_999_999
MAXSIZE_MIN, MAXSIZE_MAX = 1024, 65536
#: queue attributes rsmq clients write into the queue's hash (not messages)
ATTRS = scripts.QUEUE_FIELDS
_ATTR_MEMBERS = frozenset(a.encode() for a in ATTRS)
#: the one name whose sorted set would be the namespace's QUEUES set (``{ns}:QUEUES``)
RESERVED_QNAMES = frozenset({"QUEUES"})
#: why a script answered ``foreign`` (the id is no message's: :func:`not_an_id`)
NOT_A_MESSAGE = "no message (named like a queue field, or holding ':'); left alone"
#: the action a trash listing shows for a batch whose keys are not of the types qconsole writes
BROKEN = "broken"
#: Node rsmq's queue-name rule: what `create` accepts, so every client can use the queue
NODE_QNAME_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
ID_CHARS = string.ascii_letters + string.digits
#: what a batch qconsole makes is named (the file trash's names): only such members of the trash
#: index are batches; any other (planted) is listed ``broken`` and no key is made of it
BATCH_RE = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]{6}")
#: seconds a batch still being filled stays out of list/restore/empty after its purge last put a
#: message into it: the file trash's freshness rule (``trash._fresh``); past it, its purge is taken
#: for dead (killed, or cut off) and the batch is listed, restored and emptied as any other.
#: The same 300 s as ``fs.claims.FOREIGN_HOST_GRACE`` (not imported: counting never needs it)
FILL_GRACE_S = 300.0


class RsmqMessage(Message):
    """A message with what qconsole saw of it in Redis (checked again by every change)."""

    __slots__ = ("score", "rc", "fr")

    def __init__(self, *args: Any, score: float = 0.0, rc: int = 0, fr: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.score = score
        self.rc = rc
        self.fr = fr

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, s) for s in (*Message.__slots__, *RsmqMessage.__slots__))

    def __repr__(self) -> str:
        return f"RsmqMessage(queue={self.queue!r}, id={self.id!r}, state={self.state!r}, score={self.score!r}, rc={self.rc!r})"


def id_time(mid: str) -> float | None:
    """Send time (epoch s) from an rsmq id: base36 of Redis TIME in µs, the first 10 characters."""
    try:
        return int(mid[:10], 36) / 1e6
    except ValueError:
        return None


def not_an_id(mid: bytes) -> bool:
    """A member that is no message: named like a field of the queue's hash (its body would be
    that setting) or holding ':' (``{id}:rc``, ``{id}:fr``: another message's fields). Anyone can
    ZADD one; no client makes one. Counted as foreign, never listed, changed or restored (the
    scripts refuse it too)."""
    return mid in _ATTR_MEMBERS or b":" in mid


#: digits a receive count has at most (a planted one of thousands made every read of the namespace fail)
RC_DIGITS = scripts.RC_DIGITS


def _rc(raw: bytes | None) -> int:
    """A message's receive count as every reader (counting, listing, peek, the report) and the
    change scripts' check (``scripts._CHECK``) take it: its ``{id}:rc`` field when that is
    1-:data:`RC_DIGITS` ASCII digits, else 0 (none; or a value no client writes, e.g. planted:
    ``x``, ``-1``, thousands of digits)."""
    return int(raw) if raw is not None and len(raw) <= RC_DIGITS and raw.isdigit() else 0


def _js_length(body: bytes) -> int:
    """The length Node rsmq's sendMessage compares with ``maxsize``: the message's JavaScript
    length (UTF-16 code units: 'é' 1, an emoji 2), not its bytes; a body that is no UTF-8 (Node
    cannot send one) by its bytes."""
    try:
        return len(body.decode("utf-8").encode("utf-16-le")) // 2
    except UnicodeDecodeError:
        return len(body)


def _s(value: Any) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def member(mid: str) -> bytes:
    """The sorted-set member (and hash field) an id names: the bytes :func:`_s` decoded it from.

    Members are any bytes (anyone can ZADD ``b"\\xff"``); as ids they are decoded with
    surrogateescape, which redis-py (and hiredis, which packs str itself) cannot encode. So an id
    goes back to Redis only through here, always as bytes, byte-identical to what was read."""
    return mid.encode("utf-8", "surrogateescape")


def _bound(score: float) -> str:
    """A score as an inclusive Redis range bound (exact: repr round-trips a float)."""
    if score in (_INF, -_INF):
        return "+inf" if score > 0 else "-inf"
    return repr(score)


def _int(value: Any, default: int | None = None) -> int | None:
    if value is None:
        return default
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):  # OverflowError: "inf" (no client writes it)
        return default


def _num(value: Any) -> float | int | None:
    """A setting as stored (PyRSMQ may store floats): int when whole."""
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    if x != x or x in (_INF, -_INF):  # "nan", "inf": unreadable, as any other non-number
        return None
    return int(x) if x.is_integer() else x


_INF = float("inf")


def _why(word: str, consumed: str, changed: str) -> str:
    """The skip reason for a script's answer other than ``ok``."""
    return consumed if word == "gone" else NOT_A_MESSAGE if word == "foreign" else changed


def _rounds(ids: list[bytes], width: int) -> Iterator[tuple[int, list[list[bytes]]]]:
    """``ids`` as HMGETs of ``width`` fields an id, CHUNK fields a command and PIPELINE commands
    a round trip: each round's first index and its parts."""
    step = max(1, CHUNK // width)
    for base in range(0, len(ids), step * PIPELINE):
        yield base, [ids[i:i + step] for i in range(base, min(base + step * PIPELINE, len(ids)), step)]


def _without(members: list[tuple[bytes, float]], values: list[list[Any]],
             gone: set[int]) -> tuple[list[tuple[bytes, float]], list[list[Any]]]:
    """``members`` and their ``values`` but those at the indexes ``gone`` (no longer members)."""
    if not gone:
        return members, values
    keep = [i for i in range(len(members)) if i not in gone]
    return [members[i] for i in keep], [values[i] for i in keep]


def _after(part: list[tuple[bytes, float]], skip: int, cursor: float | None) -> tuple[int, float, str]:
    """Where a score cursor goes on after ``part`` (a full page of ``ZRANGEBYSCORE ... LIMIT``):
    from the last score, skipping the members at it already read (ties of one ms, counted
    across pages at the same score). (skip, cursor, low bound)."""
    edge = part[-1][1]
    tied = 0
    for _m, sc in reversed(part):
        if sc != edge:
            break
        tied += 1
    return tied + (skip if edge == cursor else 0), edge, _bound(edge)


class _Tally:
    """What counting a queue's members adds up."""

    def __init__(self) -> None:
        self.counts = {READY: 0, INFLIGHT: 0, EXPIRED: 0, DELAYED: 0}
        self.more_than_once = 0
        self.next_inflight: float | None = None
        self.next_hidden: float | None = None
        self.first_ready: str | None = None
        #: members scored +inf (never delivered) or -inf (always first): no deadline to show
        self.infinite = 0
        #: members that are no message (:func:`not_an_id`), and the first few of them
        self.foreign = 0
        self.foreign_named: list[str] = []
        self.messages: list[Message] = []
        self._seen: set[bytes] = set()

    def members(self, queue: str, kind: str, members: list[tuple[bytes, float]], values: list[list[Any]],
                now_ms: int, *, count: bool, collect: bool) -> None:
        seen, counts = self._seen, self.counts
        for (mid, score), vals in zip(members, values):
            if mid in seen:  # a member can move between chunks while they are read
                continue
            seen.add(mid)
            if not_an_id(mid):
                if count:
                    self.foreign += 1
                    if len(self.foreign_named) < 3:
                        self.foreign_named.append(_s(mid))
                continue
            rc = _rc(vals[0])
            finite = -_INF < score < _INF  # anyone can ZADD +inf/-inf: counted, but no deadline
            if not finite:
                self.infinite += 1
            # each judged by the one `now` of the scan
            if score <= now_ms:
                state = EXPIRED if rc else READY
                if not rc and self.first_ready is None:
                    self.first_ready = _s(mid)
            else:
                state = INFLIGHT if rc else DELAYED
                if count and finite:
                    if self.next_hidden is None or score < self.next_hidden:
                        self.next_hidden = score
                    if rc and (self.next_inflight is None or score < self.next_inflight):
                        self.next_inflight = score
            if not count:
                continue
            counts[state] += 1
            if rc > 1:
                self.more_than_once += 1
            if collect:
                sid = _s(mid)
                fr = _int(vals[1]) if len(vals) > 1 else None
                self.messages.append(RsmqMessage(
                    queue, kind, sid, state, sid, created_at=id_time(sid),
                    deadline=None if state == READY or not finite else score / 1000.0, score=score, rc=rc, fr=fr))


class RsmqBackend(Backend):
    kind = RSMQ
    title = "RSMQ"
    capabilities = frozenset({CAP_DELAYED, TRASH, SETTINGS, CREATE_QUEUE, DELETE_QUEUE, REDELIVERY_COUNT})
    settings_removable = False  # every queue has vt, delay and maxsize
    #: 10 base36 characters of send time, then 6 of the 22 random ones: unique in practice
    short_id_chars = 16
    #: the Spark report reads a namespace by rank ranges (ZRANGE) and HMGET on the executors
    report_module = "qconsole.backends.rsmq.report_chunks"
    publish_options = (
        Option("delay", "float", "Seconds before the message becomes visible (0-9999999, ms precision; "
               "default: the queue's delay).", minimum=0, maximum=DELAY_MAX),
        Option("realtime", "bool", "Also PUBLISH the queue's size on {ns}:rt:{queue}, as rsmq's realtime mode.",
               flag="--realtime"),
    )
    setting_fields = (
        SettingField("vt", "int", "Visibility timeout: seconds a received message stays hidden.", minimum=0,
                     maximum=VT_MAX),
        SettingField("delay", "int", "Seconds a new message stays hidden before its first delivery.", minimum=0,
                     maximum=DELAY_MAX),
        SettingField("maxsize", "int", "Largest message in bytes (1024-65536, or -1 for no limit).",
                     minimum=-1, maximum=MAXSIZE_MAX),
    )

    def __init__(self, target: Target, client: Any = None) -> None:
        self.spec = target
        self.target = target.shown
        self.ns = target.ns
        self.path = target.shown  # what `ls --json` and others print as the root
        self._client = client if client is not None else connect(target)
        self._scripts: dict[str, Any] = {}
        #: the server has ZMSCORE (Redis 6.2+); False once it said it has not
        self._zmscore = True
        #: seconds a batch being filled is left alone after its last message (:data:`FILL_GRACE_S`)
        self.fill_grace_s = FILL_GRACE_S
        #: batches the last trash listing passed by: being filled, and how long ago they were touched
        self._filling: dict[str, float] = {}
        #: batches the last trash listing found broken (keys of the wrong type)
        self._broken: set[str] = set()

    @classmethod
    def open(cls, text: str, *, check: bool = True) -> RsmqBackend:
        """The namespace of ``text``; ``check=False`` does not wait for the server to answer
        (see :func:`.target.connect`): a wrong URL is still refused."""
        from .target import connect, hide_in_process_title

        target = parse(text)
        hide_in_process_title(target.secret)  # a password typed in the URL leaves `ps` at once
        return cls(target, client=None if check else connect(target, check=False))

    # ------------------------------------------------------------------ plumbing

    @property
    def client(self) -> Any:
        return self._client

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 (closing never fails a command)
            pass

    def _call(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a redis-py call; its errors become one line (no password, no traceback)."""
        import redis.exceptions as rx

        try:
            return func(*args, **kwargs)
        except rx.RedisError as err:
            raise self._failed(err) from None
        except BaseException:
            # stopped with replies still on their way (ctrl+c while a round of scripts runs): the
            # connection went back to the pool with them unread, and redis-py's check for unread
            # data cannot see a reply not yet sent; the next command (a purge's FINISH) read a
            # REMOVE's "ok" as its own answer. Dropped: the next command connects afresh
            try:
                self._client.connection_pool.disconnect()
            except Exception:  # noqa: BLE001 (what stopped the call is what the caller must see)
                pass
            raise

    def _failed(self, err: Exception) -> RootError:
        return RootError(self.spec.scrub(f"{self.target}: {describe_error(err)}"))

    def _script(self, name: str) -> Any:
        script = self._scripts.get(name)
        if script is None:
            # "trash.X": the trash's own scripts (:mod:`.trash_scripts`)
            text = getattr(trash_scripts, name[6:]) if name.startswith("trash.") else getattr(scripts, name)
            script = self._scripts[name] = self._client.register_script(text)
        return script

    def _run_script(self, name: str, keys: list[str], args: list[Any], client: Any = None) -> Any:
        return self._call(self._script(name), keys=keys, args=args, client=client)

    def _each(self, name: str, keys: list[str], argvs: Sequence[list[Any]]) -> Iterator[tuple[int, str]]:
        """``(i, answer)`` of script ``name`` run once per ``argvs[i]``, SCRIPT_BATCH calls a round
        trip, progress after each batch. An error reply (e.g. a key of the wrong type) ends it with
        one line, after the batch's other answers: those scripts did run. Stopped while a batch
        waits for its answers (a time-out, a lost connection, ctrl+c), its scripts were sent and
        may still run on the server: :attr:`partial` counts them ``unknown``."""
        import redis.exceptions as rx

        script = self._script(name)
        for base in range(0, len(argvs), SCRIPT_BATCH):
            pipe = self._pipe()
            for args in argvs[base:base + SCRIPT_BATCH]:
                script(keys=keys, args=args, client=pipe)
            sent = len(pipe)
            # unknown until the caller has taken every answer of the round: a ctrl+c while it
            # takes them (after the scripts ran) left up to a round done and unsaid (CI: 256)
            if self.partial is not None:
                self.partial.unknown = sent
            replies = self._call(pipe.execute, raise_on_error=False)
            failed = next((r for r in replies if isinstance(r, rx.RedisError)), None)
            answered = [(i, _s(r)) for i, r in enumerate(replies, base) if not isinstance(r, rx.RedisError)]
            for k, pair in enumerate(answered):
                if self.partial is not None:
                    self.partial.unknown = sent - k  # this one and the rest of the round not yet taken
                yield pair
            if self.partial is not None:
                self.partial.unknown = 0
            if failed is not None:
                raise self._failed(failed)
            self.tick(base + len(replies), len(argvs))

    def _pipe(self) -> Any:
        return self._client.pipeline(transaction=False)  # never MULTI: read-only users count too

    def zkey(self, queue: str) -> str:
        return f"{self.ns}:{queue}"

    def hkey(self, queue: str) -> str:
        return f"{self.ns}:{queue}:Q"

    @property
    def queues_key(self) -> str:
        return f"{self.ns}:QUEUES"

    @property
    def trash_index(self) -> str:
        # ends in ':': no (namespace, queue) pair of any client makes such a key (module docstring)
        return f"{self.ns}:qconsole:trash:"

    def _trash_keys(self, batch: str) -> tuple[str, str, str]:
        """(meta, messages, order) of a batch named as qconsole names them (:data:`BATCH_RE`):
        no key is ever made of another name (a planted ``x:m`` would name another batch's keys)."""
        if not BATCH_RE.fullmatch(batch):
            raise OperationError(f"{batch!r} is not a trash batch name")
        base = f"{self.trash_index}{batch}:"
        return base, base + "m:", base + "o:"

    def clock(self) -> tuple[float, int]:
        """Redis TIME as (epoch seconds, epoch ms as rsmq computes it)."""
        sec, usec = self._call(self._client.time)
        return int(sec) + int(usec) / 1e6, int(sec) * 1000 + int(usec) // 1000

    def now(self) -> float:
        return self.clock()[0]

    def describe(self) -> dict[str, Any]:
        return {"root": self.target, "layout": self.kind, "ns": self.ns}

    def default_audit_log(self) -> str:
        import os

        from ...ops import audit

        return os.path.join(audit.state_home(), audit.LOG_NAME)

    def reopen_spec(self) -> dict[str, Any]:
        return {"target": self.target, "layout": self.kind}

    # ------------------------------------------------------------------ reading

    def validate_queue_name(self, name: str) -> str:
        """A name qconsole works on: a plain name as for every store (no '/', not '..', no leading
        '.'), no ':' (it would reach into other keys; neither client allows it), 1-160 printable
        characters. PyRSMQ also allows dots inside, spaces and more: those work."""
        from ..fs.root import validate_queue_name

        validate_queue_name(name)  # the plain-name rule every store shares (no '/', '..', leading '.')
        if ":" in name:
            raise QueueNameError(f"bad queue name {name!r}: rsmq queue names have no ':'")
        if len(name) > 160 or not name.isprintable():
            raise QueueNameError(f"bad queue name {name!r}: at most 160 printable characters")
        if name in RESERVED_QNAMES:
            # its sorted set would be {ns}:QUEUES, the set of queue names (Node rsmq accepts the name)
            raise QueueNameError(f"bad queue name {name!r}: its sorted set would be {self.queues_key}, "
                                 "the list of queues")
        return name

    def queue_names(self) -> tuple[list[str], list[str]]:
        members = self._call(self._client.smembers, self.queues_key)
        names, errors = [], []
        for raw in members:
            name = _s(raw)
            try:
                names.append(self.validate_queue_name(name))
            except QueueNameError as err:
                errors.append(f"{self.queues_key} lists {name!r}, which qconsole leaves alone: {err}")
        return sorted(names), errors

    def require_queue(self, name: str) -> None:
        self.validate_queue_name(name)
        if not self._call(self._client.hexists, self.hkey(name), "vt"):
            raise UnknownQueueError(f"no queue {name!r} in {self.target}")

    def queue_path(self, name: str) -> str:
        """Where the queue is, as shown (its sorted set's key)."""
        return self.zkey(self.validate_queue_name(name))

    def scan(self, queues: Iterable[str] | None = None, now: float | None = None, *,
             check_types: bool = False, jobs: int | None = 1,
             each: Callable[[QueueScan, float], Any] | None = None) -> RootScan:
        started = time.perf_counter()
        names, errors = self.queue_names()
        if queues:
            wanted = list(dict.fromkeys(self.validate_queue_name(q) for q in queues))  # each once
            missing = [q for q in wanted if q not in names]
            if missing:
                raise UnknownQueueError(f"no queue {missing[0]!r} in {self.target}")
            names = wanted
        now_s, now_ms = self.clock() if now is None else (now, int(now * 1000))
        scans = [self._scan_or_error(n, now_s, now_ms) for n in names]
        return RootScan(root=self.target, layout=self.kind, generated_at=now_s,
                        duration_s=time.perf_counter() - started, queues=scans, errors=errors,
                        per_queue=[each(s, now_s) for s in scans] if each else None)

    def _scan_or_error(self, name: str, now_s: float, now_ms: int) -> QueueScan:
        """One queue of a root scan; a queue whose keys are of the wrong type (planted, or
        another program's) is that queue's error, as a file root reports a bad directory,
        not the whole namespace's."""
        try:
            return self._scan_one(name, now_s, now_ms, collect=False)
        except RootError as err:
            if "WRONGTYPE" not in str(err):
                raise  # the server (connection, login, ACL): every queue's problem
            bad = QueueScan(name, self.kind, now_s)
            bad.errors.append(f"{self.hkey(name)} or {self.zkey(name)} is not of the type rsmq writes; not counted")
            return bad

    def scan_queue(self, name: str, now: float | None = None, *, collect: bool = False,
                   check_types: bool = False) -> QueueScan:
        self.require_queue(name)
        now_s, now_ms = self.clock() if now is None else (now, int(now * 1000))
        return self._scan_one(name, now_s, now_ms, collect=collect)

    def _range(self, key: str, start: int, stop: int) -> list[tuple[bytes, float]]:
        """Members (raw bytes) of ranks start..stop (inclusive) with scores, in chunks, pipelined."""
        out: list[tuple[bytes, float]] = []
        pos = start
        while pos <= stop:
            pipe = self._pipe()
            for _ in range(PIPELINE):
                if pos > stop:
                    break
                pipe.zrange(key, pos, min(pos + CHUNK - 1, stop), withscores=True)
                pos += CHUNK
            for chunk in self._call(pipe.execute):
                out.extend(chunk)
        return out

    def _by_score(self, key: str, low: str, high: str) -> list[tuple[bytes, float]]:
        """Members (raw bytes) with scores in ``low``..``high`` (Redis bounds), in score order, read
        in chunks from a score cursor. Ranks shift whenever a client adds or removes a member
        below them, so a range by rank taken after a count missed members at its top end (the
        newest delayed or latest held message, one scan in three beside live clients)."""
        out: list[tuple[bytes, float]] = []
        step = CHUNK * PIPELINE
        skip = 0  # members at the cursor's score already taken (ties: same ms)
        cursor: float | None = None
        while True:
            part = self._call(self._client.zrangebyscore, key, low, high, start=skip, num=step, withscores=True)
            out.extend(part)
            if len(part) < step:
                return out
            skip, cursor, low = _after(part, skip, cursor)

    def _fields(self, hkey: str, ids: list[bytes], suffixes: tuple[bytes, ...]) -> list[list[Any]]:
        """HMGET of ``id + suffix`` for each id, CHUNK ids a command, pipelined."""
        out: list[list[Any]] = []
        width = len(suffixes)
        for _base, parts in _rounds(ids, width):
            pipe = self._pipe()
            for part in parts:
                pipe.hmget(hkey, [m + sfx for m in part for sfx in suffixes])
            for values in self._call(pipe.execute):
                out.extend(values[j:j + width] for j in range(0, len(values), width))
        return out

    def _fields_scored(self, zkey: str, hkey: str, ids: list[bytes],
                       suffixes: tuple[bytes, ...]) -> tuple[list[list[Any]], list[float | None]]:
        """As :meth:`_fields`, and each id's score read right after its fields, in the same
        round trip (ZMSCORE after each HMGET; a ZSCORE each on a server before Redis 6.2): the
        score is then never older than the fields (None: no longer a member)."""
        import redis.exceptions as rx

        out: list[list[Any]] = []
        scores: list[float | None] = []
        width = len(suffixes)
        for base, parts in _rounds(ids, width):
            pipe = self._pipe()
            for part in parts:
                pipe.hmget(hkey, [m + sfx for m in part for sfx in suffixes])
                if self._zmscore:
                    pipe.zmscore(zkey, part)
                else:
                    for m in part:
                        pipe.zscore(zkey, m)
            try:
                replies = pipe.execute()
            except rx.ResponseError as err:
                if not self._zmscore or "unknown command" not in str(err).lower():
                    raise self._failed(err) from None
                self._zmscore = False  # an old server: this round again, and the rest, by ZSCORE
                more, more_scores = self._fields_scored(zkey, hkey, ids[base:], suffixes)
                return out + more, scores + more_scores
            except rx.RedisError as err:
                raise self._failed(err) from None
            it = iter(replies)
            for part in parts:
                values = next(it)
                out.extend(values[j:j + width] for j in range(0, len(values), width))
                if self._zmscore:
                    scores.extend(next(it))
                else:
                    scores.extend(next(it) for _ in part)
        return out, scores

    @staticmethod
    def _rescored(members: list[tuple[bytes, float]], values: list[list[Any]], scores: list[float | None], *,
                  visible: bool) -> tuple[list[tuple[bytes, float]], list[list[Any]]]:
        """Members with their receive counts read after their scores, checked by their scores
        read again after the counts (``scores``: :meth:`_fields_scored`). Visible: a member a consumer received in between
        has its old (visible) score and its new count, so it would count as expired, a state it
        never was in; each holding a count gets its score as it is now: still visible, it is
        expired; hidden, in flight; gone, it is left out (one holding none was ready when its
        score was read). Hidden: one without a count was delayed, or was received and acked in
        between (its count gone with it): those gone are left out, not counted delayed."""
        picked = [i for i, v in enumerate(values) if (v[0] is not None) == visible]  # (foreign ones too: harmless)
        if not picked:
            return members, values
        members = list(members)
        gone = set()
        for i, score in zip(picked, [scores[i] for i in picked]):
            if score is None:
                gone.add(i)
            elif visible:
                members[i] = (members[i][0], score)
        return _without(members, values, gone)

    def _hidden_settled(self, zkey: str, hkey: str, now_ms: int, horizon_ms: int, members: list[tuple[bytes, float]],
                        values: list[list[Any]]) -> tuple[int, int, int, list[tuple[bytes, float]], list[list[Any]]]:
        """HLEN, ZCARD and the hidden count taken again right after the hidden range was read, in
        one round trip, for the arithmetic: taken before it, every first receive while the range
        was read made one message in flight that HLEN did not count yet, so expired came out
        short by as many (and every ack of one read in flight, over). Taken after, a message is
        either in the range read, or counted by the difference between the hidden count and the
        members read (received, made visible or acked after its part was read). In the same
        round trip, the delayed members read that were due by now (their score passed while the
        range was read) are looked at again: received since, they are in flight (HLEN counts
        them now); gone, they are left out. (HLEN, ZCARD, the hidden count and those counts:
        plain reads, one pipeline, no MULTI: a read-only user counts too.)"""
        due = [i for i, ((m, sc), v) in enumerate(zip(members, values))
               if sc <= horizon_ms + 1000 and v[0] is None and not not_an_id(m)]
        pipe = self._pipe()
        pipe.hlen(hkey)
        pipe.zcard(zkey)
        pipe.zcount(zkey, f"({now_ms}", "+inf")
        step = CHUNK // 2
        for base in range(0, len(due), step):
            pipe.hmget(hkey, [f for i in due[base:base + step] for f in (members[i][0], members[i][0] + b":rc")])
        hlen, total, hidden, *parts = self._call(pipe.execute)
        if due:
            flat = [v for part in parts for v in part]
            gone = set()
            values = list(values)
            for k, i in enumerate(due):
                body, rc = flat[2 * k], flat[2 * k + 1]
                if body is None and rc is None:
                    gone.add(i)
                elif rc is not None:
                    values[i] = [rc]
            members, values = _without(members, values, gone)
        return hlen, total, hidden, members, values

    def _scan_one(self, name: str, now_s: float, now_ms: int, *, collect: bool, force_exact: bool = False) -> QueueScan:
        zkey, hkey = self.zkey(name), self.hkey(name)
        scan = QueueScan(name, self.kind, now_s)
        pipe = self._pipe()
        pipe.hmget(hkey, ATTRS)
        pipe.zcard(zkey)
        pipe.zcount(zkey, f"({now_ms}", "+inf")
        pipe.hlen(hkey)
        for a in ATTRS:  # members named like a queue field (O(1) each): no message, wherever they are
            pipe.zscore(zkey, a)
        attrs, total, hidden, hlen, *attr_scores = self._call(pipe.execute)
        attr = dict(zip(ATTRS, attrs))
        if attr["vt"] is None:
            scan.errors.append(f"listed in {self.queues_key} but {hkey} has no settings (deleted meanwhile?)")
        visible = max(0, total - hidden)
        exact = collect or force_exact or visible <= EXACT_VISIBLE
        tally = _Tally()
        # plain reads: the members by score and their receive counts by HMGET, in chunks. A
        # receive between two reads moves a member from the visible range to the hidden one:
        # visible is read first, so it is in both (counted once, as hidden), never in neither;
        # one received after the hidden range was read has its score read again (_rescored)
        wanted = (b":rc", b":fr") if collect else (b":rc",)
        visible_members = self._by_score(zkey, "-inf", str(now_ms)) if exact and total else []
        if not exact:  # the server's clock before the hidden range is read (the arithmetic's due check)
            began, began_ms = time.perf_counter(), self.clock()[1]
        hidden_members = self._by_score(zkey, f"({now_ms}", "+inf") if hidden or visible_members else []
        if len(set(map(itemgetter(0), hidden_members))) != len(hidden_members):  # one moved along the cursor
            once: set[bytes] = set()
            hidden_members = [ms for ms in hidden_members if not (ms[0] in once or once.add(ms[0]))]  # type: ignore[func-returns-value]
        hidden_rc, now_scores = self._fields_scored(zkey, hkey, [m for m, _ in hidden_members], wanted)
        hidden_members, hidden_rc = self._rescored(hidden_members, hidden_rc, now_scores, visible=False)
        if exact:
            if hidden_members and visible_members:
                taken = set(map(itemgetter(0), hidden_members))
                visible_members = [mv for mv in visible_members if mv[0] not in taken]
            visible_rc, now_scores = self._fields_scored(zkey, hkey, [m for m, _ in visible_members], wanted)
            visible_members, visible_rc = self._rescored(visible_members, visible_rc, now_scores, visible=True)
        else:
            # the arithmetic needs HLEN and the hidden range at one moment: the counts are taken
            # again right after the hidden range was read (see _hidden_settled)
            hlen, total, hidden, hidden_members, hidden_rc = self._hidden_settled(
                zkey, hkey, now_ms, began_ms + int((time.perf_counter() - began) * 1000), hidden_members, hidden_rc)
            # the visible count less the visible members named like a queue field (those
            # holding ':' only the HLEN check finds)
            taken = set(map(itemgetter(0), hidden_members))
            visible_foreign = [a for a, sc in zip(ATTRS, attr_scores)
                               if sc is not None and sc <= now_ms and a.encode() not in taken]
            visible = max(0, total - hidden - len(visible_foreign))
            # hidden members the reads did not see, net: received (or made visible, or acked)
            # after their part of the range was read
            unseen = hidden - len(hidden_members)
            # only as far into the visible range as it takes to meet the first ready message
            visible_members, visible_rc = [], []
            pos, step = 0, 100
            ranks = max(0, total - hidden)  # the visible range, planted members included
            while pos < min(ranks, OLDEST_SCAN_LIMIT):
                part = self._range(zkey, pos, min(pos + step, ranks) - 1)
                rcs = self._fields(hkey, [m for m, _ in part], (b":rc",))
                visible_members += part
                visible_rc += rcs
                if not part or any(v[0] is None and not not_an_id(m) for (m, _), v in zip(part, rcs)):
                    break
                pos, step = pos + step, CHUNK
            # (read after the hidden range: one received since is counted there, not passed by here)
            visible_rc = [v for (m, _sc), v in zip(visible_members, visible_rc) if m not in taken]
            visible_members = [ms for ms in visible_members if ms[0] not in taken]
        tally.members(name, self.kind, visible_members, visible_rc, now_ms, count=exact, collect=collect)
        tally.members(name, self.kind, hidden_members, hidden_rc, now_ms, count=True, collect=collect)
        counts = scan.counts
        for state in (READY, INFLIGHT, EXPIRED, DELAYED):
            counts[state] = tally.counts[state]
        foreign_named = tally.foreign_named
        if not exact:
            tally.foreign += len(visible_foreign)
            foreign_named = (foreign_named + visible_foreign)[:3]
        counts[FOREIGN] = tally.foreign
        if tally.foreign:
            scan.errors.append(f"{tally.foreign} member(s) of {zkey} are no message (named like a field of {hkey}, "
                               f"or holding ':'; e.g. {', '.join(map(repr, foreign_named))}): counted as foreign, "
                               "never listed or changed")
        messages = total - tally.foreign
        attr_fields = sum(v is not None for v in attrs)
        # every message has its body field; every received one also :rc and :fr (a foreign member
        # named like a queue field has that field as its "body": counted among attr_fields)
        received_total = (hlen - messages - attr_fields) / 2
        if not exact:
            # the unseen hidden members are in flight: each is one received since its part was read
            # (counted by HLEN) or one read in flight and gone since (no longer counted by HLEN)
            inflight = counts[INFLIGHT] + unseen
            received_visible = received_total - inflight
            if received_total != int(received_total) or not 0 <= received_visible <= visible or inflight < 0:
                # fields that are neither messages nor rsmq's: count exactly, slowly but in chunks
                exact_scan = self._scan_one(name, now_s, now_ms, collect=False, force_exact=True)
                if received_total != int(received_total) or not unseen:  # not a queue that moved meanwhile
                    exact_scan.warnings.insert(0, f"{hkey} has {hlen} fields, which {messages} messages do not "
                                                  "account for; counted ready/expired by reading every receive count")
                return exact_scan
            counts[INFLIGHT] = inflight
            counts[EXPIRED] = int(received_visible)
            counts[READY] = visible - int(received_visible)
        elif ((received_total != int(received_total) or received_total < counts[INFLIGHT] + counts[EXPIRED])
              and self._call(self._pipe().hlen(hkey).zcard(zkey).execute) == [hlen, total]):
            # (said only of a queue that did not change while it was read: beside live clients
            # HLEN and the members are read at different moments)
            scan.warnings.append(f"{hkey} has {hlen} fields for {messages} messages: some fields belong to "
                                 "no message (orphans) or some messages have no body")
        if tally.infinite:
            scan.warnings.append(f"{tally.infinite} message(s) scored +inf or -inf in {self.zkey(name)} (no client "
                                 "writes that): +inf is never delivered, -inf always first")
        scan.oldest_ready_created = None if tally.first_ready is None else id_time(tally.first_ready)
        scan.next_deadline = None if tally.next_inflight is None else tally.next_inflight / 1000.0
        nv = tally.next_hidden
        scan.extras = {
            "totalsent": _int(attr["totalsent"], 0),
            "totalrecv": _int(attr["totalrecv"], 0),
            "vt": _num(attr["vt"]),
            "delay": _num(attr["delay"]),
            "maxsize": _num(attr["maxsize"]),
            "created": _int(attr["created"]),
            "modified": _int(attr["modified"]),
            # over every message's receive count (unknown for the visible range counted by HLEN)
            "received_more_than_once": tally.more_than_once if exact else None,
            "next_visible_s": None if nv is None else round(max(0.0, nv / 1000.0 - now_s), 3),
            "counted": "exact" if exact else "hlen",
        }
        if collect:
            scan.messages = tally.messages
        return scan

    def find_messages(self, queue: str, idents: Sequence[str]) -> dict[str, Message]:
        """Each id looked up by itself: HMGET of its ``:rc``/``:fr`` then ZSCORE (the score read
        after the count, as counting does), CHUNK ids a round trip: O(1) an id, whatever the
        queue holds. An id no longer a member (consumed meanwhile), or naming no message
        (:func:`not_an_id`), is left out."""
        self.require_queue(queue)
        zkey, hkey = self.zkey(queue), self.hkey(queue)
        keys = []
        for ident in dict.fromkeys(idents):
            try:
                key = member(ident)
            except UnicodeEncodeError:  # no member is named so
                continue
            if not not_an_id(key):
                keys.append(key)
        _now_s, now_ms = self.clock()
        tally = _Tally()
        for base in range(0, len(keys), CHUNK):
            part = keys[base:base + CHUNK]
            pipe = self._pipe()
            for key in part:
                pipe.hmget(hkey, [key + b":rc", key + b":fr"])
                pipe.zscore(zkey, key)
            replies = self._call(pipe.execute)
            found = [(key, score) for key, score in zip(part, replies[1::2]) if score is not None]
            values = [vals for vals, score in zip(replies[0::2], replies[1::2]) if score is not None]
            tally.members(queue, self.kind, found, values, now_ms, count=True, collect=True)
        return {m.id: m for m in tally.messages}

    def list_head(self, queue: str, limit: int, state: str | None = None) -> tuple[Any, int]:
        """The first ``limit`` rows of the listing (of ``state`` only, when given), read from
        the head of the sorted set: the listing's rows are its members by score (visible, then
        hidden: one score order), so a score cursor (``ZRANGEBYSCORE ... LIMIT``, as the
        listing's own reads, in chunks of at most HEAD_CHUNK) then HMGET/ZMSCORE of just those
        members (:meth:`_fields_scored`, :meth:`_rescored`, :class:`_Tally`: each member judged
        as the listing judges it, foreign ones left out, one gone meanwhile skipped as there)
        give the same rows. Ready/expired rows are only in the visible range, in flight/delayed
        only in the hidden one: a state's rows are read from its range alone. The row count
        (for "N of COUNT shown") is a count of the queue (:meth:`_scan_one` without collecting,
        cheap), taken at the same ``now``."""
        from ...columns import MessageColumns

        self.require_queue(queue)
        now_s, now_ms = self.clock()
        scan = self._scan_one(queue, now_s, now_ms, collect=False)
        want = scan.total if state is None else scan.counts.get(state, 0)
        # a count that is exact (not HLEN arithmetic) tells when the rows of a state are all read
        stop_at = want if scan.extras and scan.extras.get("counted") == "exact" else None
        low, high = "-inf", "+inf"
        if state in (READY, EXPIRED):
            high = str(now_ms)
        elif state in (INFLIGHT, DELAYED):
            low = f"({now_ms}"
        elif state is not None:  # a state RSMQ has no message in
            return MessageColumns.from_messages(queue, [], scan), 0
        zkey, hkey = self.zkey(queue), self.hkey(queue)
        tally = _Tally()
        rows: list[Message] = []
        skip = 0  # members at the cursor's score already taken (ties: same ms)
        cursor: float | None = None
        while len(rows) < limit and (stop_at is None or len(rows) < stop_at):
            step = HEAD_CHUNK if state is not None else min(HEAD_CHUNK, limit - len(rows) + HEAD_SPARE)
            part = self._call(self._client.zrangebyscore, zkey, low, high, start=skip, num=step, withscores=True)
            values, scores = self._fields_scored(zkey, hkey, [m for m, _ in part], (b":rc", b":fr"))
            split = next((i for i, (_m, sc) in enumerate(part) if sc > now_ms), len(part))
            taken = len(tally.messages)
            for lo, hi, visible in ((0, split, True), (split, len(part), False)):
                members, vals = self._rescored(part[lo:hi], values[lo:hi], scores[lo:hi], visible=visible)
                tally.members(queue, self.kind, members, vals, now_ms, count=True, collect=True)
            rows += [m for m in tally.messages[taken:] if state is None or m.state == state]
            if len(part) < step:
                break
            skip, cursor, low = _after(part, skip, cursor)
        rows = rows[:limit]
        count = len(rows) if len(rows) < limit else max(want, len(rows))
        return MessageColumns.from_messages(queue, rows, scan), count

    def read_payload(self, msg: Message, cap: int | None) -> Payload:
        """The body by HGET (peek never changes rc, fr, totalrecv or the score); one longer than
        ``cap`` + 1 bytes (HSTRLEN) by the PEEK script: only its first ``cap`` + 1 bytes and its
        length cross the network, as a file peek reads ``cap`` + 1 bytes of a big file."""
        import redis.exceptions as rx

        from ...errors import MessageNotFoundError, QConsoleError
        from ...payload import payload_from_bytes

        hkey, key = self.hkey(msg.queue), member(msg.id)
        if not_an_id(key):  # a queue field, or another message's: never read as a body
            raise MessageNotFoundError(f"{msg.id!r} is no message of {msg.queue!r}")
        gone = MessageNotFoundError(f"message {msg.id} is gone from {msg.queue!r} (consumed meanwhile?)")
        body: Any = None
        size = 0
        if cap is not None and self._call(self._client.hstrlen, hkey, key) > cap + 1:
            try:
                out = self._script("PEEK")(keys=[hkey], args=[key, cap + 1])
            except rx.NoPermissionError:
                out = None  # a read-only ACL user (no scripts): the whole body, as before
            except rx.RedisError as err:
                raise self._failed(err) from None
            if isinstance(out, list):
                body, size = out[0], int(out[1])
            elif out is not None:
                raise gone
        if body is None:
            body = self._call(self._client.hget, hkey, key)
            if body is None:
                if self._call(self._client.zscore, self.zkey(msg.queue), key) is not None:
                    # still listed: a member without its body, which no rsmq client writes alone
                    raise QConsoleError(f"message {msg.id} of {msg.queue!r} has no body: {hkey} holds no field "
                                        "for it (planted, or a writer that died between its writes)")
                raise gone
            size = len(body)
        data = bytes(body)
        payload = payload_from_bytes(data if cap is None else data[:cap + 1], size, cap)
        rc = getattr(msg, "rc", None)  # the receive count the listing read (the TUI's `rd` column)
        if isinstance(rc, int):
            payload.redeliveries = rc
        return payload

    def message_fields(self, queue: str, mid: str) -> dict[str, Any]:
        """Peek's metadata: receive count, first receive (ms) and score, by plain reads."""
        key = member(mid)
        pipe = self._pipe()
        pipe.hmget(self.hkey(queue), [key + b":rc", key + b":fr"])
        pipe.zscore(self.zkey(queue), key)
        (rc, fr), score = self._call(pipe.execute)
        return {"rc": _rc(rc), "fr": _int(fr), "score": score}

    def message_sizes(self, queue: str, msgs: Sequence[Message]) -> dict[str, int | None]:
        """Body sizes by HSTRLEN (``ls``)."""
        out: dict[str, int | None] = {}
        for base in range(0, len(msgs), CHUNK):
            pipe = self._pipe()
            part = msgs[base:base + CHUNK]
            for m in part:
                pipe.hstrlen(self.hkey(queue), member(m.id))
            for m, n in zip(part, self._call(pipe.execute)):
                out[m.relpath] = n
        return out

    # ------------------------------------------------------------------ settings

    def settings(self, queue: str | None) -> dict[str, Setting]:
        if queue is None:
            raise SettingsError("RSMQ settings belong to a queue: name one (qconsole config QUEUE)")
        self.require_queue(queue)
        values = self._call(self._client.hmget, self.hkey(queue), [f.key for f in self.setting_fields])
        return {f.key: Setting(f.key, _num(v), "queue") for f, v in zip(self.setting_fields, values)}

    def parse_setting(self, key: str, text: str) -> Any:
        field = next((f for f in self.setting_fields if f.key == key), None)
        if field is None:
            raise SettingsError(f"unknown RSMQ setting {key!r}: use {', '.join(f.key for f in self.setting_fields)}")
        t = text.strip()
        digits = t[1:] if t.startswith("-") else t  # one sign at most: '--5' was int()'s ValueError
        if not (digits.isascii() and digits.isdigit()) or len(digits) > 20:
            raise SettingsError(f"{key} must be a whole number, not {text!r}")
        return int(t)

    def validate_settings(self, values: dict[str, Any]) -> list[str]:
        problems = []
        for key, value in values.items():
            if key not in ("vt", "delay", "maxsize"):
                problems.append(f"unknown RSMQ setting {key!r}: use vt, delay, maxsize")
            elif isinstance(value, bool) or not isinstance(value, int):
                problems.append(f"{key} must be a whole number, not {value!r}")
            elif key in ("vt", "delay") and not 0 <= value <= VT_MAX:
                problems.append(f"{key} must be between 0 and {VT_MAX} (rsmq's bounds), not {value}")
            elif key == "maxsize" and value != -1 and not MAXSIZE_MIN <= value <= MAXSIZE_MAX:
                problems.append(f"maxsize must be between {MAXSIZE_MIN} and {MAXSIZE_MAX}, or -1, not {value}")
        return problems

    def check_settings_request(self, values: dict[str, Any], unset: Sequence[str] | None) -> list[str]:
        if unset:
            raise SettingsError("RSMQ settings cannot be unset (every queue has vt, delay and maxsize)")
        problems = self.validate_settings(values)
        if problems:
            raise SettingsError(problems[0])
        return []

    def save_settings(self, queue: str | None, values: dict[str, Any], unset: Sequence[str],
                      settle_s: float) -> int:
        if queue is None:
            raise SettingsError("RSMQ settings belong to a queue: name one")
        self.check_settings_request(values, unset)
        args: list[Any] = []
        for key in sorted(values):
            args += [key, str(values[key])]
        if self._run_script("CONFIG", [self.hkey(queue)], args) != b"ok":
            raise UnknownQueueError(f"no queue {queue!r} in {self.target}")
        return 1

    # ------------------------------------------------------------------ changes

    def check_publish(self, options: dict[str, Any]) -> None:
        super().check_publish(options)
        delay = options.get("delay")
        if delay is not None and delay > DELAY_MAX:
            raise OperationError(f"delay must be between 0 and {DELAY_MAX} seconds (rsmq's bounds), not {delay!r}")

    def publish(self, queue: str, payloads: Sequence[bytes], options: dict[str, Any]) -> list[str]:
        """rsmq's sendMessage, one script per message (ids in rsmq's format; totalsent counted)."""
        self.require_queue(queue)
        delay = options.get("delay")
        delay_arg = "" if delay is None else str(int(round(float(delay) * 1000)))
        realtime = "1" if options.get("realtime") else ""
        channel = f"{self.ns}:rt:{queue}"
        keys = [self.zkey(queue), self.hkey(queue)]
        done: list[str] = []
        self.published = done  # what a publish stopped half-way did do (for its audit line), as the file layouts
        for body in payloads:
            for _attempt in range(5):
                rand = "".join(secrets.choice(ID_CHARS) for _ in range(22))
                out = self._run_script("PUBLISH", keys, [bytes(body), delay_arg, rand, realtime, channel,
                                                         _js_length(bytes(body))])
                word = _s(out[0])
                if word != "exists":
                    break
            if word == "ok":
                done.append(_s(out[1]))
                self.tick(len(done), len(payloads))  # (no round trip: a line on a terminal at most)
            elif word == "toolong":
                raise OperationError(f"message of {_js_length(bytes(body))} characters (as Node's rsmq counts: UTF-16 "
                                     f"units) is longer than the queue's maxsize ({_s(out[1])}); "
                                     f"{len(done)} published before it")
            elif word == "noqueue":
                raise UnknownQueueError(f"no queue {queue!r} in {self.target} (deleted meanwhile?)")
            else:
                raise OperationError(f"publish: could not make a unique id ({word})")
        return done

    @staticmethod
    def _seen(msg: Message) -> list[Any]:
        return [member(msg.id), repr(float(getattr(msg, "score", 0.0))), str(getattr(msg, "rc", 0) or 0)]

    def _checked(self, msgs: Sequence[Message]) -> list[Message]:
        for m in msgs:
            if not isinstance(m, RsmqMessage):
                raise OperationError(f"message {m.id} was not read from this RSMQ target")
        return list(msgs)

    def requeue(self, queue: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        from ..results import CHANGED, CONSUMED

        msgs = self._checked(msgs)
        keys = [self.zkey(queue), self.hkey(queue)]
        out: list[tuple[str, str | None]] = []
        self._stopped(out)
        for i, word in self._each("REQUEUE", keys, [self._seen(m) for m in msgs]):
            # "visible": its timeout had passed already; the next receive takes it, as asked
            out.append((msgs[i].id, None if word in ("ok", "visible") else _why(word, CONSUMED, CHANGED)))
        return out

    def _stopped(self, outcomes: list[tuple[str, str | None]], batch: str | None = None) -> Any:
        """:attr:`partial` of a change that fills ``outcomes`` as it goes (read if it stops early)."""
        from ..results import Partial

        self.partial = Partial(outcomes=outcomes, batch=batch)
        return self.partial

    def remove(self, action: str, queue: str, msgs: Sequence[Message], *, use_trash: bool,
               user: str) -> tuple[list[tuple[str, str | None]], str | None]:
        """rsmq's deleteMessage per message, each kept in a new trash batch unless not
        ``use_trash``. The batch is filled under its purge's token and sealed at the end
        (:mod:`.trash_scripts`); stopped early, :attr:`partial` says what was done: after the
        seal exactly (the batch's members: no script sent before it can add one after it), else
        with the scripts whose answers never came as ``unknown``, and the batch kept."""
        from ..results import CHANGED, CONSUMED

        msgs = self._checked(msgs)
        self.require_queue(queue)
        if not msgs:
            return [], None
        batch = token = None
        # with --no-trash the script never touches these; named like the trash's keys all the same
        meta = tmsgs = torder = f"{self.trash_index}none:"
        if use_trash:
            batch, token = self._new_batch(action, queue, user)
            meta, tmsgs, torder = self._trash_keys(batch)
        keys = [self.zkey(queue), self.hkey(queue), tmsgs, torder, meta]
        out: list[tuple[str, str | None]] = []
        part = self._stopped(out, batch)
        failing: BaseException | None = None
        try:
            argvs = [[*self._seen(m), "1" if use_trash else "", i, token or ""] for i, m in enumerate(msgs)]
            for i, word in self._each("trash.REMOVE", keys, argvs):
                mid = msgs[i].id
                if word == "ok":
                    out.append((mid, None))
                elif word == "nobatch":
                    raise OperationError(
                        f"{action} {queue}: trash batch {batch} was emptied, restored or taken over meanwhile "
                        f"(a `trash empty`/`trash restore` took it for a dead purge's after {self.fill_grace_s:g} s "
                        "without a message); stopped: the rest is left in the queue")
                else:
                    out.append((mid, _why(word, CONSUMED, CHANGED)))
        except BaseException as err:
            failing = err
            raise
        finally:
            if batch:
                batch = self._finish_batch(batch, token or "", part, failing)
                part.batch = batch
        return out, batch

    def _finish_batch(self, batch: str, token: str, part: Any, failing: BaseException | None) -> str | None:
        """Seal the batch this purge filled (FINISH): the batch, or None when it was empty and is
        dropped. After a failure the batch's members are what was done (``part`` set from them);
        when even the seal fails, the batch is kept unsealed (listed once its purge has been quiet
        for :attr:`fill_grace_s`) and the error says so."""
        meta, tmsgs, torder = self._trash_keys(batch)
        try:
            n = int(self._run_script("trash.FINISH", [meta, tmsgs, torder, self.trash_index], [token, batch]))
            if failing is not None and n >= 0 and (part.unknown or n != len(part.done)):
                # a round's answers were lost: the sealed batch says which of them went in
                have = set(part.done)
                part.outcomes.extend((m, None) for m in map(_s, self._call(self._client.zrange, torder, 0, -1))
                                     if m not in have)
                part.unknown = 0
            if n == -1:  # taken over meanwhile (sealed: still there) or emptied (gone)
                return batch if self._call(self._client.exists, meta) else None
        except RootError as err:
            if failing is None:
                raise
            if isinstance(failing, RootError):  # one line: what failed first, and what it leaves
                failing.args = (f"{failing}; the change may have partly happened: "
                                f"trash batch {batch} is kept (listed, restorable and emptied once "
                                f"{self.fill_grace_s:g} s passed without a message going in)",)
            elif not isinstance(failing, KeyboardInterrupt):
                failing.args = (f"{failing}; and then: {err}",)
            return batch
        return None if n == 0 else batch

    def move(self, src: str, dest: str, msgs: Sequence[Message]) -> list[tuple[str, str | None]]:
        from ..results import CHANGED, CONSUMED

        msgs = self._checked(msgs)
        self.require_queue(src)
        self.require_queue(dest)
        keys = [self.zkey(src), self.hkey(src), self.zkey(dest), self.hkey(dest)]
        out: list[tuple[str, str | None]] = []
        # oldest first (by the id's send time), whatever their state: each lands at Redis TIME, later
        # ones at the same or a later ms, and equal scores deliver in id order: DEST keeps the
        # order they were sent in (as the file backends' move does)
        msgs = sorted(msgs, key=lambda m: m.id)
        reasons = {"gone": CONSUMED, "changed": CHANGED, "nodest": f"queue {dest!r} is gone", "foreign": NOT_A_MESSAGE}
        self._stopped(out)
        for i, word in self._each("MOVE", keys, [self._seen(m) for m in msgs]):
            mid = msgs[i].id
            why = f"an id {mid} is in {dest!r} already" if word == "exists" else reasons.get(word, word)
            out.append((mid, None if word == "ok" else why))
        return out

    @classmethod
    def check_new_queue_name(cls, name: str) -> str:
        """What `create` accepts: a name Node rsmq accepts too, so every client can use the queue."""
        if not name or len(name) > 160 or not set(name) <= NODE_QNAME_CHARS:
            raise QueueNameError(f"bad queue name {name!r}: rsmq queue names are 1-160 of A-Z a-z 0-9 _ -")
        if name in RESERVED_QNAMES:  # rsmq accepts it, but its sorted set would be {ns}:QUEUES
            raise QueueNameError(f"bad queue name {name!r}: its sorted set would be the namespace's "
                                 "QUEUES set (the list of queues)")
        return name

    def create_queue(self, queue: str, *, vt: int = 30, delay: int = 0, maxsize: int = 65536) -> None:
        """rsmq's createQueue (its defaults; a name Node rsmq accepts, so every client can use it)."""
        self.check_new_queue_name(queue)
        problems = self.validate_settings({"vt": vt, "delay": delay, "maxsize": maxsize})
        if problems:
            raise SettingsError(problems[0])
        word = _s(self._run_script("CREATE", [self.hkey(queue), self.queues_key], [queue, vt, delay, maxsize]))
        if word == "exists":
            raise OperationError(f"{queue!r} already exists in {self.target}")

    def delete_queue(self, queue: str, *, force: bool = False) -> int:
        """rsmq's deleteQueue: the queue's hash and sorted set, and its name in QUEUES. Without
        ``force`` the script itself refuses a queue holding a message: one sent after the
        caller's emptiness check was acknowledged to its producer, and went with the queue."""
        self.validate_queue_name(queue)
        n = int(self._run_script("DELETE_QUEUE", [self.hkey(queue), self.zkey(queue), self.queues_key],
                                 [queue, "1" if force else "0"]))
        if n == -2:
            raise OperationError(f"{queue!r}: {self.hkey(queue)} or {self.zkey(queue)} is not of the type rsmq "
                                 "writes; not deleted")
        if n < 0:
            # the script counts members, the caller's check messages: members that are no message
            # (:func:`not_an_id`, planted) stay whatever purge does
            if not self._call(self._client.hexists, self.hkey(queue), "vt"):
                raise OperationError(f"{queue!r} has no settings ({self.hkey(queue)}) but {self.zkey(queue)} holds "
                                     "members no client can receive; not deleted (--force deletes them with it)")
            scan = self.scan_queue(queue)
            if not scan.total and scan.counts.get(FOREIGN):
                raise OperationError(f"{queue!r} holds no message but {scan.counts[FOREIGN]} member(s) of {self.zkey(queue)} "
                                     "that are no message (foreign: see qconsole stats); not deleted (--force deletes "
                                     "them with the queue)")
            raise OperationError(f"{queue!r}: a message arrived meanwhile; not deleted (purge it first, or --force)")
        return n

    # ------------------------------------------------------------------ trash

    def _new_batch(self, action: str, queue: str, user: str) -> tuple[str, str]:
        """A new batch, being filled (its meta and its index entry in one script): (name, token)."""
        now = self.now()
        batch = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + "-" + secrets.token_hex(3)
        token = secrets.token_hex(8)
        meta, _m, _o = self._trash_keys(batch)
        self._run_script("trash.NEW_BATCH", [meta, self.trash_index], [batch, token, action, queue, user, repr(now)])
        return batch, token

    def _drop_batch(self, batch: str) -> None:
        pipe = self._pipe()
        if BATCH_RE.fullmatch(batch):  # a planted name: only its entry in the index goes
            pipe.unlink(*self._trash_keys(batch))  # UNLINK: a big batch is freed off the main thread
        pipe.zrem(self.trash_index, member(batch))
        self._call(pipe.execute)

    def _take(self, batches: Sequence[str]) -> dict[str, str]:
        """Each batch's answer to TAKE (``ok``: no purge is filling it, now; ``filling``), a
        round trip per CHUNK; planted names (no keys of theirs are touched) answer ``ok``."""
        out = {b: "ok" for b in batches if not BATCH_RE.fullmatch(b)}
        real = [b for b in batches if b not in out]
        script = self._script("trash.TAKE")
        for base in range(0, len(real), CHUNK):
            pipe = self._pipe()
            for b in real[base:base + CHUNK]:
                script(keys=[self._trash_keys(b)[0]], args=[repr(float(self.fill_grace_s))], client=pipe)
            out.update(zip(real[base:base + CHUNK], map(_s, self._call(pipe.execute))))
        return out

    def _filling_line(self, batch: str) -> str:
        ago = self._filling.get(batch)
        when = f"{ago:.0f} s ago" if ago is not None else "lately"
        return (f"trash batch {batch} is being filled by a delete or purge still running (its last message went in "
                f"{when}); try again when it is done (a batch whose purge died is taken after "
                f"{self.fill_grace_s:g} s)")

    def trash_list(self) -> list[TrashBatch]:
        """The batches, oldest first. Anyone may plant one: a batch whose keys are not of the types
        qconsole writes (hash, hash, sorted set), or whose name is not one qconsole makes, is
        listed as ``broken`` (no queue, no count), never restored (the others still are), and
        removed by ``trash empty``. A batch a purge is still filling is left out while that
        purge put a message into it within :attr:`fill_grace_s` (as the file trash hides one
        under its ``.fill-`` name); past that its purge is taken for dead and it is listed."""
        import redis.exceptions as rx

        from ..results import TrashBatch

        index = self._call(self._client.zrange, self.trash_index, 0, -1, withscores=True)
        now = self.now()
        out = []
        self._broken = set()
        self._filling = {}
        for base in range(0, len(index), CHUNK):
            pipe = self._pipe()
            part = [(_s(raw), score) for raw, score in index[base:base + CHUNK]]
            named = [(b, score) for b, score in part if BATCH_RE.fullmatch(b)]
            for b, _score in named:
                meta, tmsgs, order = self._trash_keys(b)
                pipe.type(tmsgs)  # read by restore only: its type checked here, before any restore
                pipe.hmget(meta, ["action", "queue", "user", "created", "filler", "touched"])
                pipe.zcard(order)
                pipe.zrange(order, 0, TRASH_IDS_LISTED - 1)  # what the batch holds, as the file trash says
            res = iter(self._call(pipe.execute, raise_on_error=False) if named else ())
            for b, score in part:
                if not BATCH_RE.fullmatch(b):  # planted: no key is made of its name
                    self._broken.add(b)
                    out.append(TrashBatch(batch=b, created_at=float(_num(score) or 0), action=BROKEN, queue=None,
                                          count=0))
                    continue
                kind, fields, count, ids = (next(res) for _ in range(4))
                errors = [r for r in (kind, fields, count, ids) if isinstance(r, rx.RedisError)]
                if any("WRONGTYPE" not in str(e) for e in errors):
                    raise self._failed(errors[0])  # the server's problem (login, ACL), not the batch's
                if errors or _s(kind) not in ("hash", "none"):
                    self._broken.add(b)
                    out.append(TrashBatch(batch=b, created_at=float(_num(score) or 0), action=BROKEN, queue=None,
                                          count=0))
                    continue
                action, queue, user, created, filler, touched = (None if v is None else _s(v) for v in fields)
                if filler is not None:
                    ago = now - float(_num(touched) or 0)
                    if abs(ago) < self.fill_grace_s:  # a purge is filling it (either way of the clock)
                        self._filling[b] = ago
                        continue
                when = _num(created)  # written by us, but anyone may plant a batch
                out.append(TrashBatch(batch=b, created_at=float(when or 0), action=action or "?",
                                      queue=queue, count=int(count), user=user or "",
                                      ids=[_s(m) for m in ids]))
        return out

    def trash_batch_queue(self, batch: str | None) -> tuple[str, str | None]:
        batches = self.trash_list()
        if batch is not None and batch in self._filling:
            raise OperationError(self._filling_line(batch))
        if not batches:
            raise OperationError("the trash is empty" + (f" (but for {len(self._filling)} batch(es) being filled by "
                                                         "a delete or purge still running)" if self._filling else ""))
        if batch is None:
            # the newest batch that can be restored: a broken one never stands in the way
            pick = next((b for b in reversed(batches) if b.batch not in self._broken), None)
            if pick is None:
                raise OperationError(f"the trash holds no restorable batch ({len(batches)} broken: "
                                     "see `qconsole trash list`; `qconsole trash empty` removes them)")
        else:
            pick = next((b for b in batches if b.batch == batch), None)
            if pick is None:
                raise OperationError(f"no trash batch {batch!r} (see `qconsole trash list`)")
        if pick.batch in self._broken:
            raise OperationError(f"trash batch {pick.batch!r} is broken: its keys are not of the types qconsole "
                                 "writes (planted?); not restored (`qconsole trash empty` removes it)")
        return pick.batch, pick.queue

    def trash_restore(self, batch: str) -> tuple[list[str], list[tuple[str, str]]]:
        """Every message of ``batch`` back where it was, in its order, with body, rc, fr and score."""
        name, queue = self.trash_batch_queue(batch)
        if queue is None:
            raise OperationError(f"trash batch {name} names no queue")
        self.validate_queue_name(queue)  # the batch's own record: anyone may plant a batch
        if self._take([name])[name] != "ok":  # a purge started filling it since it was listed
            raise OperationError(self._filling_line(name))
        meta, tmsgs, torder = self._trash_keys(name)
        keys = [self.zkey(queue), self.hkey(queue), tmsgs, torder]
        outs: list[tuple[str, str | None]] = []
        part = self._stopped(outs)
        members = self._call(self._client.zrange, torder, 0, -1)  # raw: they go back as they are
        ids = [_s(m) for m in members]
        reasons = {"gone": "no longer in the trash", "noqueue": f"queue {queue!r} is gone",
                   "exists": f"an id like it is in {queue!r} again",
                   "foreign": "no message id (named like a queue field, or holding ':'); left in the trash"}
        for i, word in self._each("RESTORE", keys, [[m] for m in members]):
            outs.append((ids[i], None if word == "ok" else reasons.get(word, word)))
        if not self._call(self._client.zcard, torder):
            self._drop_batch(name)
        return part.done, part.skipped

    def trash_empty(self, older_than_s: float | None) -> list[tuple[str, str | None]]:
        now = self.now()
        old = [b.batch for b in self.trash_list() if older_than_s is None or now - b.created_at >= older_than_s]
        # each taken first (a dead purge's sealed): one a purge has begun filling since the
        # listing is left, and said
        taken = self._take(old)
        out: list[tuple[str, str | None]] = []
        for i, batch in enumerate(old):
            if taken[batch] != "ok":
                out.append((batch, self._filling_line(batch)))
                continue
            self._drop_batch(batch)  # one round trip (UNLINK: freed off the server's main thread)
            out.append((batch, None))
            self.tick(i + 1, len(old))
        return out
