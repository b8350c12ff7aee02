"""A peer that is not Redis can never hang a command (review C, finding 4).

redis-py's socket time-out bounds each recv, not a reply: a listener that trickles a byte a
second, or sends an endless line, hung `check` and `stats` forever (the endless line at 100%
CPU, memory growing). The fake listeners here are the hostile peers themselves; the bounds
must still let a real server's big replies and a long-lived idle connection through.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from qconsole.backends import open_target

from .conftest import qconsole


class Fake:
    """A TCP listener on a free loopback port that answers every connection with ``mode``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, c: socket.socket) -> None:
        try:
            if self.mode == "plusflood":  # "+" then an endless line, as fast as it goes
                c.sendall(b"+")
                while not self.stop.is_set():
                    c.sendall(b"a" * 65536)
            elif self.mode == "trickle":  # one byte a second, never a CRLF
                while not self.stop.is_set():
                    c.sendall(b"+")
                    time.sleep(1)
            elif self.mode == "silent":
                self.stop.wait(60)
            elif self.mode == "bigbulk":  # a bulk string bigger than any Redis string, then zeros
                c.sendall(b"$999999999999\r\n")
                while not self.stop.is_set():
                    c.sendall(b"\0" * 65536)
            elif self.mode == "slow_ok":  # every command answered, each after 3 s
                while not self.stop.is_set():
                    if not c.recv(65536):
                        return
                    time.sleep(3)
                    c.sendall(b"+OK\r\n")
        except OSError:
            pass
        finally:
            c.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def fake(request):
    peers: list[Fake] = []

    def make(mode: str) -> Fake:
        peers.append(Fake(mode))
        return peers[-1]

    yield make
    for p in peers:
        p.close()


def _timed(*args: str) -> tuple[float, object]:
    t = time.monotonic()
    out = qconsole(*args, timeout=40)
    return time.monotonic() - t, out


@pytest.mark.parametrize("mode, says", [
    ("plusflood", "a reply line longer than 64 KiB"),
    ("trickle", "no complete reply within 5 s"),
    ("silent", "no answer within 5 s"),  # the read time-out, not the 3 s of connecting
    ("bigbulk", "over the 512 MiB one Redis string can hold"),
    ("slow_ok", "no complete answer within 8 s of connecting"),
])
def test_a_peer_that_is_not_redis_is_one_line_within_seconds(fake, mode, says):
    peer = fake(mode)
    url = f"redis://127.0.0.1:{peer.port}"
    if mode in ("plusflood", "bigbulk"):  # (the waiting modes only through check: 5-8 s each)
        took, out = _timed("stats", url)
        assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out
        assert says in out.stderr, out.stderr
        assert took < 12, took
    took, out = _timed("check", url)  # Nagios: one UNKNOWN line on stdout
    assert out.returncode == 3 and out.stdout.startswith("QCONSOLE UNKNOWN") and says in out.stdout, out
    assert out.stdout.count("\n") == 1 and took < 12, took


def test_big_replies_and_an_idle_connection_still_work(node, url, r, ns):
    node.call("createQueue", qname="big", maxsize=-1)
    pipe = r.pipeline(transaction=False)
    for i in range(40000):  # more than one 16k-member range
        pipe.zadd(f"{ns}:big", {f"m{i:031d}": i})
        pipe.hset(f"{ns}:big:Q", f"m{i:031d}", "x")
    pipe.execute()
    body = b"\r\n".join([b"y" * 100_000] * 300)  # 30 MB, CRLFs and long runs without them
    r.hset(f"{ns}:big:Q", "m" + "0" * 31, body)
    backend = open_target(url)
    client = backend.client
    assert client.zcard(f"{ns}:big") == 40000
    assert len(client.zrange(f"{ns}:big", 0, -1, withscores=True)) == 40000
    assert client.hget(f"{ns}:big:Q", "m" + "0" * 31) == body
    time.sleep(6)  # longer than the 5 s read time-out: an idle connection has no deadline
    assert client.ping() and backend.scan_queue("big").counts  # the console's next refresh
    backend.close()


_BUSY = """local t = redis.call('TIME'); local stop = tonumber(t[1]) * 1e6 + tonumber(t[2]) + ARGV[1] * 1e6
repeat t = redis.call('TIME') until tonumber(t[1]) * 1e6 + tonumber(t[2]) >= stop
return 1"""


def test_the_handshake_deadline_bounds_a_new_connection_only(url, monkeypatch):
    """redis-py calls connect() before every command: the handshake's deadline was set again for
    each, so every reply slower than it (8 s) was refused as a handshake that never ended. Here
    the deadline is 0.3 s and a reply takes 0.6 s, on a connection that answered its PING."""
    from qconsole.backends.rsmq import bounded

    monkeypatch.setattr(bounded, "HANDSHAKE_S", 0.3)
    backend = open_target(url)
    client = backend.client
    assert client.ping()
    assert client.eval(_BUSY, 0, "0.6") == 1  # raised ReplyTimeout: '... within 0.3 s of connecting'
    backend.close()


def test_replies_are_framed_until_the_server_has_answered_as_redis(url):
    """Framing every reply in Python cost ~40% of a scan of a 300k-message queue (review): it
    bounds a peer that is not Redis (the fake peers above), so it ends when the handshake and the
    PING have been answered; later replies are bounded by size and a deadline by bytes."""
    from qconsole.backends.rsmq import bounded

    backend = open_target(url)
    client = backend.client
    client.ping()
    socks = [c._sock for c in client.connection_pool._available_connections if c._sock is not None]
    assert socks and all(isinstance(s, bounded.BoundedSocket) and s.framing is False for s in socks)
    backend.close()


def test_commands_are_packed_by_redis_py_not_hiredis(url):
    """ctrl+c while a purge packed its round of scripts crashed qconsole (SIGSEGV, exit -11: no
    summary, no audit line; 1 run in ~15 of test_an_interrupted_purge_says_and_logs_what_it_did).
    ``hiredis.pack_command`` takes an int argument's repr without checking it, and CPython's
    ``PyObject_Repr`` fails when a signal is pending: a NULL then dereferenced. Our connections
    pack with redis-py's own serializer, which does the same work in Python."""
    from redis.connection import PythonRespSerializer

    backend = open_target(url)
    try:
        conn = backend.client.connection_pool.make_connection()
        packer = conn._command_packer
        assert isinstance(packer, PythonRespSerializer)
        assert b"".join(packer.pack("EVALSHA", "abc", 1, 2.5, b"\xff")) == \
            b"*5\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$3\r\n2.5\r\n$1\r\n\xff\r\n"
        conn.disconnect()
        assert backend.client.ping()
    finally:
        backend.close()
