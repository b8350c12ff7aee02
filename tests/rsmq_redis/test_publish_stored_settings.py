"""`publish` without --delay reads the queue's stored delay and maxsize as Node's sendMessage
does (review C, finding 7): parseInt, delay within 0..9999999 s. A planted `nan`/`-inf`/`1e309`
never makes a message scored nan/-inf/inf; a delay Node refuses is refused with one line.
"""

from __future__ import annotations

import json

import pytest

from .conftest import qconsole


@pytest.fixture
def env(tmp_path):
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


# planted delay -> Node's sendMessage refuses (None) or waits parseInt(delay) seconds
DELAYS = ["nan", "-inf", "inf", "1e309", "1e20", "-5", "abc", "10000000", " 12abc", "9999999", "2.9", ""]


@pytest.mark.parametrize("delay", DELAYS)
def test_publish_reads_the_stored_delay_as_node_does(node, url, r, ns, env, delay):
    node.call("createQueue", qname="q")
    r.hset(f"{ns}:q:Q", "delay", delay)
    theirs = node.run(("sendMessage", {"qname": "q", "message": "from node"}))[0]
    out = qconsole("publish", "q", "hello", "-r", url, env=env)
    scores = dict(r.zrange(f"{ns}:q", 0, -1, withscores=True))
    if "error" in theirs:  # Node refuses this queue: so does qconsole, with one clear line
        assert theirs["error"] == "invalidValue"
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert "stored delay" in out.stderr and "give --delay" in out.stderr, out.stderr
        assert scores == {}
        # an explicit --delay needs no stored one
        out = qconsole("publish", "q", "hello", "--delay", "0", "-r", url, env=env)
        assert out.returncode == 0, out.stderr
        (score,) = r.zrange(f"{ns}:q", 0, -1, withscores=True)
        sec, usec = r.time()
        assert abs(score[1] - (sec * 1000 + usec // 1000)) < 5000
        return
    assert out.returncode == 0, out.stderr
    mine = out.stdout.split()[-1]
    node_score, my_score = scores[theirs["ok"].encode()], scores[mine.encode()]
    # both waited parseInt(delay) seconds, a finite and deliverable score
    assert abs(node_score - my_score) < 3000, (node_score, my_score)


@pytest.mark.parametrize("maxsize", ["1e309", "nan", "-inf", "12abc"])
def test_publish_reads_the_stored_maxsize_as_node_does(node, url, r, ns, env, maxsize):
    node.call("createQueue", qname="q")
    r.hset(f"{ns}:q:Q", "maxsize", maxsize)
    theirs = node.run(("sendMessage", {"qname": "q", "message": "hello world"}))[0]
    out = qconsole("publish", "q", "hello world", "-r", url, env=env)
    if "error" in theirs:
        assert theirs["error"] == "messageTooLong"
        assert out.returncode != 0 and "maxsize" in out.stderr, out.stderr
        assert r.zcard(f"{ns}:q") == 0
    else:
        assert out.returncode == 0, out.stderr
        assert r.zcard(f"{ns}:q") == 2


def test_publish_json_and_audit_say_nothing_was_done(node, url, r, ns, env, tmp_path):
    """The error outcome of a refused publish is the truth: no id was published."""
    node.call("createQueue", qname="q")
    r.hset(f"{ns}:q:Q", "delay", "nan")
    out = qconsole("publish", "q", "hello", "-r", url, env=env)
    assert out.returncode == 2
    log = tmp_path / "state" / "qconsole" / "audit.log"
    if log.exists():
        rec = json.loads(log.read_text().splitlines()[-1])
        assert rec.get("ids", []) == [] and rec.get("outcome") == "error", rec
    assert r.zcard(f"{ns}:q") == 0
