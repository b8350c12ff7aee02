"""Logins, ACLs and TLS against a real server; the password never shows in any output.

ACL users are made on the session's server at run time (the default user stays as it was):
a read-only one (reads and TIME only, no scripts, no MULTI) and an operator without
@dangerous. TLS runs against a second, TLS-only server with a throw-away CA made by openssl.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest

from .conftest import RedisServer, missing, qconsole

RO_PW = "ro-Pw-" + uuid.uuid4().hex[:12]
OP_PW = "op-Pw-" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="module")
def users(redis_server):
    c = redis_server.client()
    c.execute_command("ACL", "SETUSER", "qc_ro", "reset", "on", f">{RO_PW}", "~*", "&*", "+@read", "+time",
                      "+ping")
    c.execute_command("ACL", "SETUSER", "qc_op", "reset", "on", f">{OP_PW}", "~*", "&*", "+@all", "-@dangerous")
    yield
    c.execute_command("ACL", "DELUSER", "qc_ro", "qc_op")
    c.close()


@pytest.fixture
def filled(node, ns):
    node.call("createQueue", qname="jobs")
    for i in range(3):
        node.call("sendMessage", qname="jobs", message=f"m{i}")
    node.call("receiveMessage", qname="jobs", vt=100)
    return ns


def target(server, ns, user, pw):
    return f"redis://{user}:{pw}@127.0.0.1:{server.port}?ns={ns}"


def test_read_only_acl_user_counts_lists_and_peeks(redis_server, users, filled):
    url = target(redis_server, filled, "qc_ro", RO_PW)
    out = qconsole("stats", url, "--json")
    assert out.returncode == 0, out.stderr
    q = json.loads(out.stdout)["queues"][0]
    assert (q["ready"], q["inflight"]) == (2, 1)
    for args in (("ls", "jobs", "--root", url), ("peek", "jobs", "--root", url), ("trash", "list", "--root", url),
                 ("check", url), ("stats", url, "-f", "prometheus"), ("config", "jobs", "--root", url)):
        out = qconsole(*args)
        assert out.returncode == 0, (args, out.stderr)
    # a change is refused by the server's ACL: one line, exit 2, nothing changed
    out = qconsole("publish", "jobs", "x", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "ACL" in out.stderr, out.stderr
    assert RO_PW not in out.stderr


def test_operator_without_dangerous_commands_does_everything(redis_server, users, filled, tmp_path):
    url = target(redis_server, filled, "qc_op", OP_PW)
    audit = str(tmp_path / "audit.log")
    for args in (("create", "other"), ("publish", "jobs", "y", "--delay", "5"), ("requeue", "jobs", "--all"),
                 ("move", "jobs", "other", "--all"), ("purge", "other", "--yes"), ("trash", "restore"),
                 ("config", "other", "vt=5"), ("trash", "empty", "--yes")):
        out = qconsole(*args, "--root", url, "--audit-log", audit)
        assert out.returncode == 0, (args, out.stdout, out.stderr)
        assert OP_PW not in out.stdout + out.stderr
    text = open(audit).read()
    assert OP_PW not in text and len(text.splitlines()) == 8
    assert all(json.loads(x)["root"] == f"redis://qc_op@127.0.0.1:{redis_server.port}?ns={filled}"
               for x in text.splitlines())


def test_password_never_shows(redis_server, users, filled, tmp_path):
    url = target(redis_server, filled, "qc_op", OP_PW)
    state = tmp_path / "state"
    env = {"XDG_STATE_HOME": str(state)}  # the default audit log of a Redis target
    runs = [("stats", url, "--json"), ("stats", url, "-f", "prometheus"), ("stats", url), ("check", url),
            ("ls", "jobs", "--root", url, "--json"), ("peek", "jobs", "--root", url, "--json"),
            ("publish", "nope", "x", "--root", url), ("publish", "jobs", "x", "--root", url),
            ("purge", "jobs", "--yes", "--root", url), ("trash", "list", "--root", url),
            ("audit", "--root", url), ("stats", url, "-q", "nope"),
            ("stats", target(redis_server, filled, "qc_op", OP_PW + "x")),
            ("stats", f"redis://qc_op:{OP_PW}@127.0.0.1:1?ns=x"),
            ("stats", f"redis://qc_op:{OP_PW}@127.0.0.1:{redis_server.port}/99")]
    for args in runs:
        out = qconsole(*args, env=env)
        assert OP_PW not in out.stdout and OP_PW not in out.stderr, args
        assert "Traceback" not in out.stderr
    doc = json.loads(qconsole("stats", url, "--json").stdout)
    assert doc["root"] == f"redis://qc_op@127.0.0.1:{redis_server.port}?ns={filled}"
    log = state / "qconsole" / "audit.log"
    assert log.exists() and OP_PW not in log.read_text()


@pytest.mark.parametrize("how", ["wrong", "missing-user"])
def test_refused_login_is_one_line_exit_2(redis_server, users, ns, how):
    url = (target(redis_server, ns, "qc_op", "not-" + OP_PW) if how == "wrong"
           else target(redis_server, ns, "nobody", OP_PW))
    started = time.monotonic()
    out = qconsole("stats", url)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "login refused" in out.stderr and OP_PW not in out.stderr
    assert time.monotonic() - started < 10


def test_password_from_env_and_file(redis_server, users, filled, tmp_path):
    bare = f"redis://qc_op@127.0.0.1:{redis_server.port}?ns={filled}"
    out = qconsole("stats", bare, "--json", env={"REDISCLI_AUTH": OP_PW})
    assert out.returncode == 0, out.stderr
    pw = tmp_path / "pw"
    pw.write_text(OP_PW + "\n")
    out = qconsole("stats", bare + f"&password_file={pw}", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["root"] == bare


def test_unreachable_and_bad_targets_are_one_line_within_seconds(redis_server):
    # a port that accepts and never answers: the socket timeouts bound the wait
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    cases = [f"redis://127.0.0.1:{port}", "redis://127.0.0.1:1", f"redis://127.0.0.1:{redis_server.port}/99",
             f"redis://127.0.0.1:{redis_server.port}/x", "redis://", "redis://h:99999", "unix:///nonexistent.sock",
             f"redis://127.0.0.1:{redis_server.port}?bogus=1", "rediss://127.0.0.1:1?ca=/nonexistent"]
    try:
        for url in cases:
            started = time.monotonic()
            out = qconsole("stats", url, timeout=30)
            took = time.monotonic() - started
            assert out.returncode == 2 and out.stderr.count("\n") == 1, (url, out.stderr)
            assert "Traceback" not in out.stderr and took < 9, (url, took)
    finally:
        silent.close()


def test_unix_socket_target(redis_server, node, ns):
    node.call("createQueue", qname="u")
    node.call("sendMessage", qname="u", message="x")
    out = qconsole("stats", f"unix://{redis_server.sock}?ns={ns}", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["queues"][0]["ready"] == 1


# ---- TLS ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    if shutil.which("openssl") is None:
        missing("openssl is not on PATH")
    d = tmp_path_factory.mktemp("tls")

    def ossl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=qconsole test CA",
         "-keyout", "ca.key", "-out", "ca.pem")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr")
    (d / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
         "-extfile", "san.ext", "-out", "server.pem")
    server = RedisServer(d / "srv", tls={"cert": str(d / "server.pem"), "key": str(d / "server.key"),
                                         "ca": str(d / "ca.pem")})
    yield server, str(d / "ca.pem")
    server.stop()


def test_tls_verifies_the_server_certificate(tls_server):
    server, ca = tls_server
    base = f"rediss://localhost:{server.tls_port}"
    ok = qconsole("stats", f"{base}?ca={ca}", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["root"] == base
    ok = qconsole("stats", base, "--ca", ca, "--json")
    assert ok.returncode == 0, ok.stderr
    # without the CA: refused (the throw-away CA is in no trust store), one line, exit 2
    bad = qconsole("stats", base, env={"QCONSOLE_REDIS_CA": ""})
    assert bad.returncode == 2 and "TLS" in bad.stderr and bad.stderr.count("\n") == 1, bad.stderr
    # plain redis:// to a TLS port: one line too
    plain = qconsole("stats", f"redis://localhost:{server.tls_port}")
    assert plain.returncode == 2 and plain.stderr.count("\n") == 1, plain.stderr


def test_tls_insecure_is_said_loudly(tls_server):
    server, _ca = tls_server
    out = qconsole("--insecure", "stats", f"rediss://localhost:{server.tls_port}", "--json")
    assert out.returncode == 0, out.stderr
    assert "NOT verified" in out.stderr
    out = qconsole("ls", "nope", "--root", f"rediss://localhost:{server.tls_port}", "--insecure")
    assert "NOT verified" in out.stderr and out.returncode == 2


def test_password_leaves_the_process_title(redis_server, users, filled):
    """A password typed in the URL is overwritten in /proc/PID/cmdline (what `ps` shows)."""
    import sys
    from pathlib import Path

    exe = str(Path(sys.executable).with_name("qconsole"))
    url = target(redis_server, filled, "qc_op", OP_PW)
    proc = subprocess.Popen([exe, "stats", url, "--json", "--watch", "0.5"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        assert json.loads(first)["root"].startswith("redis://qc_op@")
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert OP_PW.encode() not in cmdline and b"redis://qc_op:" in cmdline
    finally:
        proc.kill()
        proc.wait(10)
