"""A private Redis server for the RSMQ tests, and the two reference clients beside it.

The server is a real ``redis-server`` (no persistence, loopback port and a unix socket in a
temp dir), started once per session and stopped at the end. Peers: the Node client rsmq 0.12.4
(``tests/node``, installed by ``npm ci``) and PyRSMQ 0.6.1 (the ``test`` extra). Under CI
(``CI=true``) nothing here skips: a missing server or Node install fails loudly.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE.parent / "node"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(why: str) -> None:
    """Skip locally; under CI a missing tool is a failure, never a silent skip."""
    if IN_CI:
        pytest.fail(f"CI: {why} (the RSMQ tests may not skip in CI; .ci/run installs it)", pytrace=False)
    pytest.skip(why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One running redis-server: ``port``, ``sock`` (unix socket path), ``url(ns)``."""

    def __init__(self, workdir: Path, extra: list[str] | None = None, *, tls: dict[str, str] | None = None) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            missing("redis-server is not on PATH (apt-get install redis-server)")
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.sock = str(self.dir / "redis.sock")
        args = [exe, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.dir),
                "--unixsocket", self.sock, "--unixsocketperm", "700", "--daemonize", "no",
                "--logfile", str(self.dir / "redis.log"), "--databases", "4"]
        if tls:
            self.tls_port = free_port()
            args += ["--port", "0", "--tls-port", str(self.tls_port), "--tls-cert-file", tls["cert"],
                     "--tls-key-file", tls["key"], "--tls-ca-cert-file", tls["ca"], "--tls-auth-clients", "no"]
        else:
            args += ["--port", str(self.port)]
        self.proc = subprocess.Popen([*args, *(extra or [])], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.sock):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                log = (self.dir / "redis.log").read_text(errors="replace") if (self.dir / "redis.log").exists() else ""
                raise RuntimeError(f"redis-server did not start: {log[-2000:]}")
            time.sleep(0.02)

    def client(self, **kwargs):
        import redis

        return redis.Redis(unix_socket_path=self.sock, protocol=2, **kwargs)

    def url(self, ns: str = "rsmq", db: int | None = None) -> str:
        path = f"/{db}" if db else ""
        return f"redis://127.0.0.1:{self.port}{path}?ns={ns}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    try:
        import redis  # noqa: F401
    except ImportError:
        missing("redis-py is not installed (pip install -e '.[rsmq]')")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def ns(redis_server) -> str:
    """A fresh namespace for one test (the server is shared by the session)."""
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture
def url(redis_server, ns) -> str:
    return redis_server.url(ns)


@pytest.fixture
def r(redis_server):
    c = redis_server.client()
    yield c
    c.close()


class NodePeer:
    """Calls on the reference Node client, run by ``tests/node/peer.js``."""

    def __init__(self, port: int, ns: str, password: str | None = None) -> None:
        self.conn = {"host": "127.0.0.1", "port": port, "ns": ns}
        if password:
            self.conn["password"] = password

    def run(self, *calls: tuple[str, dict]) -> list[dict]:
        out = subprocess.run(["node", str(NODE_DIR / "peer.js"), json.dumps(self.conn), json.dumps(list(calls))],
                             capture_output=True, text=True, timeout=60, cwd=NODE_DIR)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.splitlines()[0])  # rsmq logs late script loads after it

    def call(self, method: str, **args) -> object:
        res = self.run((method, args))[0]
        if "error" in res:
            raise RuntimeError(f"node rsmq {method}: {res['error']}: {res.get('message')}")
        return res["ok"]

    def producer(self, qname: str, count: int, prefix: str, delay_every: int = 0) -> subprocess.Popen:
        return subprocess.Popen(
            ["node", str(NODE_DIR / "producer.js"), json.dumps(self.conn),
             json.dumps({"qname": qname, "count": count, "prefix": prefix, "delayEvery": delay_every})],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=NODE_DIR)


@pytest.fixture(scope="session")
def node_ready():
    if shutil.which("node") is None:
        missing("node is not on PATH")
    if not (NODE_DIR / "node_modules" / "rsmq" / "package.json").exists():
        missing("tests/node/node_modules is missing: run `npm ci` in tests/node")
    version = json.loads((NODE_DIR / "node_modules" / "rsmq" / "package.json").read_text())["version"]
    assert version == "0.12.4", version
    return True


@pytest.fixture
def node(node_ready, redis_server, ns) -> NodePeer:
    return NodePeer(redis_server.port, ns)


@pytest.fixture
def pyrsmq(redis_server, ns):
    try:
        from rsmq import RedisSMQ
    except ImportError:
        missing("PyRSMQ is not installed (the test extra pins PyRSMQ==0.6.1)")
    return RedisSMQ(host="127.0.0.1", port=redis_server.port, ns=ns)


def qconsole(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """The console script, as an operator runs it."""
    exe = Path(sys.executable).with_name("qconsole")
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, env=full_env)
