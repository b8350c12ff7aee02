"""A private Redis server for the tests (RSMQ backend, contract suite): a real ``redis-server``
with no persistence on a free loopback port and a unix socket in a temp dir, one per test
process (started on first use, stopped at exit). Under CI (``CI=true``) a missing server
fails loudly instead of skipping.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parent / "node"
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
        self.args = [*args, *(extra or [])]
        self.start()

    def start(self) -> None:
        """(Re)start the server on its port and socket (a restart comes back empty: no save)."""
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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


_shared: RedisServer | None = None


def shared_server() -> RedisServer:
    """The test process's one server (started on first use)."""
    global _shared
    try:
        import redis  # noqa: F401
    except ImportError:
        missing("redis-py is not installed (pip install -e '.[rsmq]')")
    if _shared is None:
        _shared = RedisServer(Path(tempfile.mkdtemp(prefix="qc-redis-")))
        atexit.register(_stop_shared)
    return _shared


def _stop_shared() -> None:
    if _shared is not None:
        _shared.stop()
        shutil.rmtree(_shared.dir, ignore_errors=True)
