"""A planted counter never leaves a change half done (review C, finding 6).

Redis does not roll back a script's earlier writes when a later command fails: `move` and
`publish` used to move/publish first and then fail on HINCRBY of a planted non-integer
`totalsent`, reporting an error (and no ids) for a change that had happened, so a retried
publish duplicated. The count now comes before every write: the change is refused whole.
"""

from __future__ import annotations

import pytest

from .conftest import qconsole


@pytest.fixture
def env(tmp_path):
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def _send3(node) -> None:
    node.run(("createQueue", {"qname": "src"}), ("createQueue", {"qname": "tls_jobs"}),
             *[("sendMessage", {"qname": "src", "message": m}) for m in "abc"])


@pytest.mark.parametrize("planted", ["1.5", "x", "9223372036854775807"])
def test_move_and_publish_refuse_a_planted_counter_and_change_nothing(node, url, r, ns, env, planted):
    _send3(node)
    r.hset(f"{ns}:tls_jobs:Q", "totalsent", planted)
    out = qconsole("move", "src", "tls_jobs", "--all", "-r", url, env=env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "totalsent" in out.stderr and "nothing moved" in out.stderr, out.stderr
    assert "TLS" not in out.stderr  # a queue named *tls* in an error reply is no TLS failure
    assert (r.zcard(f"{ns}:src"), r.zcard(f"{ns}:tls_jobs")) == (3, 0)  # nothing moved after all
    assert r.hget(f"{ns}:tls_jobs:Q", "totalsent") == planted.encode()
    fields = r.hlen(f"{ns}:tls_jobs:Q")
    out = qconsole("publish", "tls_jobs", "hello", "-r", url, env=env)
    assert out.returncode == 2 and "totalsent" in out.stderr and "nothing published" in out.stderr, out.stderr
    assert r.zcard(f"{ns}:tls_jobs") == 0 and r.hlen(f"{ns}:tls_jobs:Q") == fields  # no body left behind either
    # repaired as the line says: one publish is one message (a retry never duplicated anything)
    r.hset(f"{ns}:tls_jobs:Q", "totalsent", 0)
    out = qconsole("publish", "tls_jobs", "hello", "-r", url, env=env)
    assert out.returncode == 0, out.stderr
    assert r.zcard(f"{ns}:tls_jobs") == 1 and node.call("receiveMessage", qname="tls_jobs")["message"] == "hello"
    assert node.call("getQueueAttributes", qname="tls_jobs")["totalsent"] == 1
