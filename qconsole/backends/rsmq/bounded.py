"""Bounds on what one Redis reply may cost, so no peer can hang a command.

redis-py's ``socket_timeout`` bounds each ``recv``, not a reply: a peer that is not Redis and
sends one byte a second, or an endless line (``+aaaa…`` with no CRLF), kept every command
waiting forever, the endless line at 100% CPU with memory growing without bound. Here every
connection redis-py makes for a target goes through :class:`BoundedSocket`, which watches the
reply stream as it arrives (before the parser, hiredis or redis-py's own, sees it) and ends the
reply with one line when:

* a line (status, error, integer, a length header) passes :data:`LINE_MAX` bytes: Redis's own
  lines are short, only bulk strings are long, and they announce their length first;
* a bulk string announces more than :data:`BULK_MAX` (512 MiB, the most one Redis string holds);
* one reply has taken longer than ``SOCKET_TIMEOUT_S`` plus one second per :data:`MIN_RATE`
  bytes of bulk strings it announced (a 16k-member ZRANGE gets ~6 s, a 64 MiB body ~69 s; a
  trickle of a few bytes a second gets the plain 5 s);
* one reply passes :data:`REPLY_MAX` bytes in all;
* connecting, the handshake (AUTH, SELECT, CLIENT SETINFO) and the first reply after it (our
  PING) have taken longer than ``CONNECT_TIMEOUT_S + SOCKET_TIMEOUT_S`` in all.

Only a reply being waited for is timed: an idle connection (the console's, between refreshes)
has no deadline. The framing (the line and string bounds) is looked at in Python, per string:
it cost ~40% of a scan of a 300k-message queue (review), so it applies only until the server
has answered the handshake and our PING as Redis does; from then on each reply is held to its
size and to a deadline that grows with the bytes that arrived (the same 1 s per MiB), which
stops a server that stalls or trickles. A server that speaks RESP through the handshake and
then sends an endless line is stopped at :data:`REPLY_MAX`. Imported only by
:func:`.target.connect` (it imports redis).
"""

from __future__ import annotations

import re
import socket
import time
from typing import Any

import redis.exceptions as rx

from .target import CONNECT_TIMEOUT_S, SOCKET_TIMEOUT_S

#: the longest reply line (status, error, integer, length header) accepted
LINE_MAX = 64 * 1024
#: the longest bulk string accepted: Redis's own limit on one string (proto-max-bulk-len)
BULK_MAX = 512 * 1024 * 1024
#: the most bytes one reply may take in all (a whole body of up to 1 GiB, as payload.WHOLE_CAP)
REPLY_MAX = (1 << 30) + (16 << 20)
#: bytes a second a big reply must at least arrive at: each MiB of announced bulk strings adds 1 s
MIN_RATE = 1024 * 1024
#: connecting + handshake + the first reply, in all
HANDSHAKE_S = CONNECT_TIMEOUT_S + SOCKET_TIMEOUT_S

_HEAD = 24  # bytes of a line kept to read a length header
_BULK = re.compile(rb"[$]([0-9]{1,9})\r\n")  # a bulk-string header: at most 999,999,999 bytes


class ReplyTimeout(rx.TimeoutError):
    """A reply (or the handshake) took longer than its deadline; ``str()`` is the line to show."""


class ReplyRefused(rx.ConnectionError):
    """A reply broke a size bound (line, bulk string, whole reply); ``str()`` is the line to show."""


class _Framing:
    """Where the RESP stream is: in a line (its length so far and its head) or in a bulk string
    (bytes still to come). Only lines are looked at: a bulk string is skipped by its length."""

    __slots__ = ("need", "head", "line", "cr", "announced")

    def __init__(self) -> None:
        self.need = 0  # bytes of the current bulk string still to come (with its CRLF)
        self.head = b""  # the first _HEAD bytes of the current line
        self.line = 0  # its length so far
        self.cr = False  # the last chunk ended inside a line with '\r'
        self.announced = 0  # bulk bytes announced since the counter was last reset

    def feed(self, data: bytes) -> None:
        pos, n = 0, len(data)
        need = self.need
        bulk = _BULK.match
        while pos < n:
            if need:
                take = n - pos if n - pos < need else need
                need -= take
                pos += take
                continue
            if not self.line:
                # the common case first: a whole bulk-string header of up to 9 digits in this chunk
                m = bulk(data, pos)
                while m is not None:
                    size = int(m.group(1))
                    if size > BULK_MAX:
                        raise ReplyRefused(f"a reply announced a string of {size} bytes, over the "
                                           f"{BULK_MAX >> 20} MiB one Redis string can hold: not a Redis server?")
                    self.announced += size
                    pos = m.end() + size + 2
                    if pos >= n:
                        break
                    m = bulk(data, pos)
                if pos >= n:
                    need = pos - n
                    break
            if self.line and self.cr and pos == 0 and data[:1] == b"\n":
                end, nxt = 0, 1  # a CRLF split between two chunks
                self.line -= 1  # (the '\r' is no part of the line; the head is cut at it below)
            else:
                end = data.find(b"\r\n", pos)
                if end < 0:
                    if len(self.head) < _HEAD:
                        self.head += data[pos:pos + _HEAD - len(self.head)]
                    self.line += n - pos
                    self.cr = data.endswith(b"\r")
                    if self.line > LINE_MAX:
                        raise ReplyRefused(f"a reply line longer than {LINE_MAX // 1024} KiB: "
                                           "not a Redis server (or not speaking RESP)")
                    break
                nxt = end + 2
            length = self.line + end - pos
            if length > LINE_MAX:
                raise ReplyRefused(f"a reply line longer than {LINE_MAX // 1024} KiB: "
                                   "not a Redis server (or not speaking RESP)")
            head = (self.head + data[pos:pos + _HEAD]) if self.line else data[pos:pos + _HEAD]
            self.head, self.line, self.cr = b"", 0, False
            if head[:1] in (b"$", b"=", b"!"):  # bulk string, verbatim string, bulk error
                cut = head.find(b"\r")
                try:
                    size = int(head[1:cut if cut >= 0 else length])
                except ValueError:
                    size = -1  # the parser says what is wrong with it
                if size > BULK_MAX:
                    raise ReplyRefused(f"a reply announced a string of {size} bytes, over the "
                                       f"{BULK_MAX >> 20} MiB one Redis string can hold: not a Redis server?")
                if size >= 0:
                    need = size + 2
                    self.announced += size
            pos = nxt
        self.need = need


class BoundedSocket:
    """A connected socket (TCP, unix or TLS) whose reads are held to the bounds above while a
    reply is awaited (:meth:`arm` .. :meth:`disarm`); everything else is the socket's own."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._timeout = sock.gettimeout()
        self._framing = _Framing()
        self._start = 0.0
        self._until: float | None = None  # the handshake's deadline, when one applies
        self._armed = False
        self._got = 0
        #: replies are framed (line and string bounds) until the handshake's last reply
        self.framing = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def settimeout(self, value: float | None) -> None:
        self._timeout = value
        self._sock.settimeout(value)

    def gettimeout(self) -> float | None:
        return self._timeout

    def arm(self, until: float | None) -> None:
        """A reply is awaited from now; ``until``: an overall deadline (the handshake's) too."""
        self._armed = True
        self._start = time.monotonic()
        self._until = until
        self._got = 0
        self._framing.announced = 0

    def disarm(self) -> None:
        self._armed = False
        self._sock.settimeout(self._timeout)

    def _deadline(self) -> tuple[float, str]:
        grown = self._framing.announced if self.framing else self._got
        own = self._start + SOCKET_TIMEOUT_S + grown / MIN_RATE
        if self._until is not None and self._until < own:
            return self._until, f"no complete answer within {HANDSHAKE_S:g} s of connecting (is this a Redis server?)"
        if not self._got:
            return own, f"no answer within {SOCKET_TIMEOUT_S:g} s (is the server up, and is this its port?)"
        return own, (f"no complete reply within {own - self._start:.3g} s (the server or the network is "
                     "too slow, or this is not a Redis server)")

    def _read(self, call: Any, *args: Any) -> Any:
        if not self._armed:
            return call(*args)
        deadline, why = self._deadline()
        left = deadline - time.monotonic()
        if left <= 0:
            raise ReplyTimeout(why)
        plain = self._timeout is None or left < self._timeout
        self._sock.settimeout(left if plain else self._timeout)
        try:
            return call(*args)
        except socket.timeout:
            if plain:
                raise ReplyTimeout(self._deadline()[1]) from None
            raise ReplyTimeout(f"no answer within {self._timeout:g} s (is the server up, and is this its port?)") \
                from None

    def _saw(self, data: Any) -> None:
        self._got += len(data)
        if self._got > REPLY_MAX:
            raise ReplyRefused(f"a reply over {REPLY_MAX >> 20} MiB: refused")
        if self.framing:
            self._framing.feed(bytes(data))

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        n = self._read(self._sock.recv_into, buffer, nbytes, flags)
        if n and not flags & socket.MSG_PEEK:
            self._saw(memoryview(buffer)[:n])
        return n

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data = self._read(self._sock.recv, bufsize, flags)
        if data and not flags & socket.MSG_PEEK:
            self._saw(data)
        return data


class _Bounded:
    """Mixed into redis-py's connection class of the target (TCP, unix socket or TLS)."""

    _qc_until: float | None = None
    _qc_connecting = False

    def _connect(self) -> Any:
        return BoundedSocket(super()._connect())  # type: ignore[misc]

    def _construct_command_packer(self, packer: Any) -> Any:
        """redis-py's own command packer, never hiredis's: ``hiredis.pack_command`` uses a
        number's repr unchecked, and ``PyObject_Repr`` fails when a signal is pending, so ctrl+c
        landing while a round of scripts was packed crashed the process (SIGSEGV at address 8,
        no summary, no audit line) instead of stopping it. (hiredis still parses the replies.)"""
        if packer is not None:
            return packer
        from redis.connection import PythonRespSerializer

        return PythonRespSerializer(self._buffer_cutoff, self.encoder.encode)  # type: ignore[attr-defined]

    def _qc_connect(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        if self._qc_connecting or getattr(self, "_sock", None) is not None:
            # (redis-py calls connect() before every command: only a new connection is bounded
            # as one; the handshake's deadline on every reply refused big ones after 8 s)
            return call(*args, **kwargs)
        self._qc_connecting = True
        self._qc_until = time.monotonic() + HANDSHAKE_S
        try:
            return call(*args, **kwargs)
        finally:
            self._qc_connecting = False

    def connect(self) -> Any:
        return self._qc_connect(super().connect)  # type: ignore[misc]

    def connect_check_health(self, *args: Any, **kwargs: Any) -> Any:
        return self._qc_connect(super().connect_check_health, *args, **kwargs)  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        sock = getattr(self, "_sock", None)
        if not isinstance(sock, BoundedSocket):
            return super().read_response(*args, **kwargs)  # type: ignore[misc]
        sock.arm(self._qc_until)
        try:
            response = super().read_response(*args, **kwargs)  # type: ignore[misc]
        finally:
            if getattr(self, "_sock", None) is sock:
                sock.disarm()
        if not self._qc_connecting:
            if self._qc_until is not None:  # the first reply after the handshake: a Redis server
                sock.framing = False
            self._qc_until = None  # the first reply after the handshake was the last it bounds
        return response


_CLASSES: dict[type, type] = {}


def bounded_class(base: type) -> type:
    """``base`` (a redis-py connection class) with the bounds above."""
    cls = _CLASSES.get(base)
    if cls is None:
        cls = _CLASSES[base] = type(f"Bounded{base.__name__}", (_Bounded, base), {})
    return cls
