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
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from redis_peer import IN_CI, NODE_DIR, RedisServer, free_port, missing, shared_server  # noqa: E402,F401

@pytest.fixture(scope="session")
def redis_server():
    return shared_server()

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
