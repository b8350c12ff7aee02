"""One id is looked up by itself (review C #12), against a real redis-server: `peek Q ID`,
`delete Q ID`, `requeue Q ID` and `move Q D ID` read that id's score and fields, not the
whole queue (every member and every `:rc`/`:fr`: 2.5-3 s and 200 MB at 300k messages).
Proved by the server's own command counts (INFO commandstats), not by timing."""

from __future__ import annotations

import pytest

from qconsole.backends import open_target
from qconsole.ops.operations import Operations
from qconsole.ops.result import NOT_IN_QUEUE

from .conftest import qconsole

N = 30_000


def calls(r) -> dict[str, int]:
    stats = r.info("commandstats")
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}


def seeded(r, ns: str, node) -> list[str]:
    node.call("createQueue", qname="q")
    node.call("createQueue", qname="dst")
    ids = [node.call("sendMessage", qname="q", message=f"m{i}") for i in range(3)]
    held = node.call("receiveMessage", qname="q", vt=3600)["id"]  # the oldest: in flight
    assert held == ids[0]
    sec, _us = r.time()
    pipe = r.pipeline(transaction=False)
    for i in range(N):  # many more, older than those three (read first by any listing)
        mid = f"0{i:09d}" + "x" * 22
        pipe.zadd(f"{ns}:q", {mid: i})
        pipe.hset(f"{ns}:q:Q", mid, "body")
    pipe.execute()
    return ids


@pytest.mark.parametrize("command", ["peek", "delete", "requeue", "move"])
def test_one_id_reads_that_id_only(node, r, ns, url, tmp_path, command):
    held, ready, other = seeded(r, ns, node)
    argv = {"peek": ["peek", "q", ready], "delete": ["delete", "q", ready, "--yes"],
            "requeue": ["requeue", "q", held], "move": ["move", "q", "dst", other]}[command]
    r.config_resetstat()
    res = qconsole(*argv, "-r", url, "--audit-log", str(tmp_path / "audit.log"))
    assert res.returncode == 0, res.stderr
    seen = calls(r)
    # no listing: not one range of the queue read, and a handful of HMGETs, not N / 500
    assert not any(seen.get(c) for c in ("zrange", "zrangebyscore", "zrevrange", "zscan", "hgetall", "hscan")), seen
    assert seen.get("hmget", 0) <= 3, seen
    if command == "delete":
        assert r.zscore(f"{ns}:q", ready) is None
    if command == "requeue":
        assert r.zscore(f"{ns}:q", held) <= r.time()[0] * 1000 + 1000
    if command == "move":
        assert r.zscore(f"{ns}:dst", other) is not None and r.zscore(f"{ns}:q", other) is None
    if command == "peek":
        assert "m1" in res.stdout


def test_an_id_gone_meanwhile_is_skipped_and_a_typo_refused(node, r, ns, url, tmp_path):
    held, ready, _other = seeded(r, ns, node)
    node.call("deleteMessage", qname="q", id=ready)  # consumed before the change runs
    ops = Operations(open_target(url), audit_log=str(tmp_path / "audit.log"))
    result = ops.delete("q", [ready, held], missing="skip")
    assert result.done == [held] and result.skipped == [(ready, NOT_IN_QUEUE)]
    res = qconsole("delete", "q", ready, "--yes", "-r", url, "--audit-log", str(tmp_path / "audit.log"))
    assert res.returncode != 0 and f"no message {ready!r} in queue 'q'" in res.stderr, res.stderr
    # peek of an id no longer there says so (the listing finds no prefix of it either)
    res = qconsole("peek", "q", ready, "-r", url)
    assert res.returncode != 0 and "no message" in res.stderr, res.stderr
