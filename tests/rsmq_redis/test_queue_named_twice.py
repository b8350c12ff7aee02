"""Hostile-review findings on RSMQ one-shot commands: `stats -q a -q a` counted the queue twice
(totals, Prometheus series, Nagios perfdata), as on a file root; a queue key of the wrong type
was redis-py's raw pipeline/script error."""

from __future__ import annotations

import json

from .conftest import qconsole


def test_a_queue_named_twice_is_counted_once(node, url):
    node.call("createQueue", qname="jobs")
    node.call("createQueue", qname="other")
    for i in range(3):
        node.call("sendMessage", qname="jobs", message=f"m{i}")
    twice = ["-q", "jobs", "-q", "other", "-q", "jobs"]
    doc = json.loads(qconsole("stats", url, "--json", *twice).stdout)
    assert [q["name"] for q in doc["queues"]] == ["jobs", "other"]
    assert doc["totals"]["queues"] == 2 and doc["totals"]["ready"] == 3
    prom = qconsole("stats", url, "--format", "prometheus", *twice).stdout
    series = [line.rsplit(" ", 1)[0] for line in prom.splitlines() if not line.startswith("#")]
    assert series and len(series) == len(set(series))
    res = qconsole("check", url, *twice)
    assert res.returncode == 0 and "2 queues, 3 ready" in res.stdout, res.stdout
    perf = res.stdout.split("|", 1)[1].split()
    assert len(perf) == len({p.split("=")[0] for p in perf})


def test_a_queue_key_of_the_wrong_type_is_said_plainly(node, url, r, ns):
    """`ls`/`peek`/`publish`/`delete-queue` of a queue whose sorted set is a string said
    redis-py's 'Command # 2 (ZCARD rsmq:q) of pipeline caused error: WRONGTYPE Operation
    against a key holding the wrong kind of value' (or a script's '... script: <sha1>, on
    @user_script:48.'), where `stats` said the key is not of the type rsmq writes. One plain
    line naming the key where it is known; nothing changed."""
    node.call("createQueue", qname="jobs")
    r.set(f"{ns}:jobs", "planted")
    before = r.hgetall(f"{ns}:jobs:Q")
    for args in (["ls", "jobs"], ["peek", "jobs"], ["publish", "jobs", "x"], ["delete-queue", "jobs", "-y"]):
        out = qconsole(*args, "-r", url, "--audit-log", "/dev/null")
        assert out.returncode == 2 and out.stderr.count("\n") == 1, (args, out.stderr)
        assert "is not of the type rsmq writes (WRONGTYPE" in out.stderr, (args, out.stderr)
        assert "pipeline" not in out.stderr and "user_script" not in out.stderr, (args, out.stderr)
    assert f"{ns}:jobs is not of the type" in qconsole("ls", "jobs", "-r", url).stderr
    assert r.get(f"{ns}:jobs") == b"planted" and r.hgetall(f"{ns}:jobs:Q") == before
