"""No part of a password ever appears in output, whatever form the URL has (review C, finding 9).

urlsplit's port error quoted the netloc's tail (an unencoded `#`, `/` or `?` in the password
left its head there), a digit password after `#` was taken as the port of the user's name as
host, and `redis://PASSWORD@host` -- redis-cli's form, and Redis's one-argument AUTH -- was
shown as a user name. Runs against a real server with `requirepass`.
"""

from __future__ import annotations

import uuid

import pytest

from .conftest import RedisServer, qconsole

PW = "Pw" + uuid.uuid4().hex[:10]


@pytest.fixture(scope="module")
def locked(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("locked"), ["--requirepass", PW])
    yield server
    server.stop()


def _all(out) -> str:
    return out.stdout + out.stderr


@pytest.mark.parametrize("login", [":{pw}#1@", "ops:{pw}/1@", ":{pw}?1@", "ops:6379#{pw}@", ":6379#x{pw}@",
                                   ])
def test_unencoded_characters_in_the_password_show_none_of_it(locked, login):
    url = f"redis://{login.format(pw=PW)}127.0.0.1:{locked.port}"
    for args in (("check", url), ("stats", url)):
        out = qconsole(*args)
        assert out.returncode in (2, 3), out
        assert PW not in _all(out) and "6379" not in _all(out) and "ops" not in _all(out), _all(out)
        assert "%-encode" in _all(out) or "cannot" in _all(out), _all(out)


def test_the_password_alone_before_the_at_is_the_password(locked, node_ready):
    url = f"redis://{PW}@127.0.0.1:{locked.port}"
    out = qconsole("check", url)  # as redis-cli -u reads it: AUTH PASSWORD
    assert out.returncode == 0 and PW not in _all(out), _all(out)
    wrong = "Wrong" + PW
    out = qconsole("check", f"redis://{wrong}@127.0.0.1:{locked.port}")
    assert out.returncode == 3 and "login refused" in out.stdout, _all(out)
    assert wrong not in _all(out) and "Wrong" not in _all(out), _all(out)
    out = qconsole("stats", f"redis://{wrong}@127.0.0.1:{locked.port}", "--json")
    assert out.returncode == 2 and "Wrong" not in _all(out), _all(out)


def test_a_user_beside_a_password_from_the_environment_is_a_user(locked, redis_server):
    # the session's server has ACL users on the default config: make one for this test
    c = redis_server.client()
    c.execute_command("ACL", "SETUSER", "qc_pwform", "reset", "on", f">{PW}", "~*", "&*", "+@all")
    try:
        url = f"redis://qc_pwform@127.0.0.1:{redis_server.port}"
        out = qconsole("check", url, env={"REDISCLI_AUTH": PW})
        assert out.returncode == 0, _all(out)
        out = qconsole("check", url, env={"REDISCLI_AUTH": "nope"})
        assert out.returncode == 3 and "login refused" in out.stdout and "qc_pwform" not in _all(out), _all(out)
    finally:
        c.execute_command("ACL", "DELUSER", "qc_pwform")
        c.close()


def test_an_at_in_a_query_value_is_written_encoded(redis_server, tmp_path):
    pw_file = tmp_path / "a@b"
    pw_file.write_text("")
    url = f"redis://127.0.0.1:{redis_server.port}?password_file={tmp_path}/a%40b"
    out = qconsole("check", url)
    assert out.returncode == 0, _all(out)
    out = qconsole("check", f"redis://127.0.0.1:{redis_server.port}?password_file={tmp_path}/a@b")
    assert out.returncode == 3 and "%-encode" in out.stdout, _all(out)


def test_report_descriptors_never_carry_the_password(monkeypatch):
    from qconsole.backends.rsmq.report_chunks import report_location

    monkeypatch.setenv("REDISCLI_AUTH", "")  # (restored after the test)
    loc = report_location(f"redis://{PW}@127.0.0.1:1?ns=x")
    assert PW not in loc and loc == "redis://127.0.0.1:1?ns=x"
    import os

    assert os.environ["REDISCLI_AUTH"] == PW
