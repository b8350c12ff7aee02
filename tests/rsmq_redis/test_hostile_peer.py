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
