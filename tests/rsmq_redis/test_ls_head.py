"""`ls Q --limit N` reads the head of the queue only (review C #12), against a real
redis-server with messages made by the Node client: the first N rows of the full listing, in
its order, with its columns and its "N of COUNT shown (--limit)" note, from a bounded read
(the whole queue was read before: 3 s and 200 MB at 300k messages). The bound is proved by the
server's own records (INFO commandstats, and SLOWLOG for each command's arguments), not by
timing."""

from __future__ import annotations

import json
import re
import time

import pytest

from qconsole.backends import open_target

from .conftest import qconsole

N = 30_000
STATES4 = ("ready", "inflight", "expired", "delayed")


def mixed(node, r, ns: str) -> None:
    """A queue holding every state, interleaved, and members a listing leaves out or flags."""
    node.call("createQueue", qname="q")
    for i in range(6):
        node.call("sendMessage", qname="q", message=f"a{i}")
    for _ in range(2):
        node.call("receiveMessage", qname="q", vt=0)  # received, visible again at once: expired
    for _ in range(2):
        node.call("receiveMessage", qname="q", vt=3600)  # in flight
    for i in range(4):
        node.call("sendMessage", qname="q", message=f"d{i}", delay=3600 + i)  # delayed
    time.sleep(0.01)
    for i in range(5):
        node.call("sendMessage", qname="q", message=f"b{i}")
    node.call("receiveMessage", qname="q", vt=0)
    node.call("receiveMessage", qname="q", vt=1800)
    # planted: a member holding ':' (foreign), one of bytes that are not UTF-8, one scored -inf
    now_ms = r.time()[0] * 1000
    r.zadd(f"{ns}:q", {b"x:rc": now_ms - 5, b"\xff\xfeundecodable": now_ms - 7, b"minusinf": float("-inf")})
    r.hset(f"{ns}:q:Q", mapping={b"\xff\xfeundecodable": b"body", b"minusinf": b"body"})


def _plain(text: str) -> list[str]:
    """Plain ls lines with the relative deadline (it moves between two runs) blanked."""
    return [re.sub(r"\s+", " ", re.sub(r"in \S+|\S+ ago", "T", line)).strip() for line in text.splitlines()]


def _doc(text: str) -> dict:
    doc = json.loads(text)
    doc.pop("generated_at")
    for m in doc["messages"]:
        m.pop("expires_in_s")
    return doc


@pytest.mark.parametrize("state", [None, *STATES4])
def test_ls_limit_is_the_head_of_the_full_listing(node, r, ns, url, state):
    mixed(node, r, ns)
    sel = ["--state", state] if state else []
    # each full listing once (it does not depend on the limit): the head of each compared to it
    full_plain = qconsole("ls", "q", *sel, "-r", url)
    full_json = qconsole("ls", "q", *sel, "--json", "-r", url)
    full_ids = qconsole("ls", "q", *sel, "--ids", "-r", url)
    for limit in (1, 3, 100):
        full = full_plain
        head = qconsole("ls", "q", *sel, "--limit", str(limit), "-r", url)
        assert full.returncode == 0 and head.returncode == 0, (full.stderr, head.stderr)
        rows = _plain(full.stdout)
        count = len(rows) - 1  # under the header
        assert count > 0, full.stdout
        assert _plain(head.stdout) == rows[:limit + 1], (head.stdout, full.stdout)
        note = f"{min(limit, count)} of {count} shown (--limit)\n"
        assert (note in head.stderr) == (limit < count), head.stderr
        assert head.stderr.replace(note, "") == full.stderr

        full = full_json
        head = qconsole("ls", "q", *sel, "--json", "--limit", str(limit), "-r", url)
        assert full.returncode == 0 and head.returncode == 0, (full.stderr, head.stderr)
        want, got = _doc(full.stdout), _doc(head.stdout)
        assert got["count"] == want["count"] == count
        assert got["shown"] == min(limit, count)
        assert got["messages"] == want["messages"][:limit]
        assert {k: v for k, v in got.items() if k not in ("messages", "shown")} == \
            {k: v for k, v in want.items() if k not in ("messages", "shown")}

        full = full_ids
        head = qconsole("ls", "q", *sel, "--ids", "--limit", str(limit), "-r", url)
        assert full.returncode == 0 and head.returncode == 0, (full.stderr, head.stderr)
        # (an id a line cannot carry, the undecodable one, is left out of both, with a warning)
        ids = [m["id"] for m in want["messages"][:limit]]
        assert head.stdout.splitlines() == [i for i in ids if i.isprintable() and i.strip()], head.stdout
        assert full.stdout.splitlines()[:len(head.stdout.splitlines())] == head.stdout.splitlines()
        assert ("of %d shown (--limit)" % count in head.stderr) == (limit < count), head.stderr

    # the backend's own head: the same Message objects as the listing's first rows
    handle = open_target(url)
    now = handle.now()
    cols = handle.list_messages("q", now)
    listed = [m for m in cols if state is None or m.state == state]
    for limit in (1, 3, 100):
        got, count = handle.list_head("q", limit, state)
        assert [(m.id, m.state, m.deadline, m.rc, m.fr) for m in got] == \
            [(m.id, m.state, m.deadline, m.rc, m.fr) for m in listed[:limit]]
        assert count == len(listed)


def seeded(r, ns: str, node) -> None:
    node.call("createQueue", qname="q")
    node.call("sendMessage", qname="q", message="d", delay=3600)
    for i in range(3):
        node.call("sendMessage", qname="q", message=f"m{i}")
    node.call("receiveMessage", qname="q", vt=3600)
    pipe = r.pipeline(transaction=False)
    for i in range(N):  # many more, older than those (the head of any listing)
        mid = f"0{i:09d}" + "x" * 22
        pipe.zadd(f"{ns}:q", {mid: i})
        pipe.hset(f"{ns}:q:Q", mid, "body")
    pipe.execute()


def _argc(command: bytes) -> int:
    """A SLOWLOG entry's argument count (Redis keeps 31 and says how many more)."""
    more = re.search(rb"\.\.\. \((\d+) more arguments\)$", command)
    return 31 + int(more.group(1)) if more else len(command.split(b" "))


def _observed(r, *argv: str, url: str) -> tuple[object, dict, list]:
    """``qconsole ARGV -r URL`` with the server's command counts and every command it ran."""
    old = r.config_get("slowlog-*")
    r.config_set("slowlog-log-slower-than", 0)
    r.config_set("slowlog-max-len", 100_000)
    try:
        r.slowlog_reset()
        r.config_resetstat()
        res = qconsole(*argv, "-r", url)
        stats = {k.removeprefix("cmdstat_"): v["calls"] for k, v in r.info("commandstats").items()}
        log = [e["command"] for e in r.slowlog_get(100_000)]
    finally:
        r.config_set("slowlog-log-slower-than", old["slowlog-log-slower-than"])
        r.config_set("slowlog-max-len", old["slowlog-max-len"])
    return res, stats, log


def _bounded(log: list) -> None:
    """No range of the whole queue: each ZRANGE spans a few thousand ranks at most, each read by
    score from the head takes a few thousand members at most, and the fields read are few."""
    for cmd in log:
        words = cmd.split(b" ")
        name = words[0].upper()
        if name == b"ZRANGE":
            assert int(words[3]) - int(words[2]) < 5000, cmd
        if name == b"ZRANGEBYSCORE" and words[2] == b"-inf":
            upper = [w.upper() for w in words]
            assert b"LIMIT" in upper and int(words[upper.index(b"LIMIT") + 2]) <= 5000, cmd
    fields = sum(_argc(cmd) - 2 for cmd in log if cmd.split(b" ")[0].upper() == b"HMGET")
    assert fields <= 5000, fields


@pytest.mark.parametrize("argv", [[], ["--json"], ["--ids"], ["--state", "ready"], ["--state", "inflight"],
                                  ["--state", "delayed"]])
def test_ls_limit_reads_a_bounded_head(node, r, ns, url, argv):
    seeded(r, ns, node)
    res, stats, log = _observed(r, "ls", "q", *argv, "--limit", "20", url=url)
    assert res.returncode == 0, res.stderr
    rows = res.stdout.strip().splitlines()
    assert len(rows) >= 20 or argv[-1] in ("inflight", "delayed"), res.stdout
    assert not any(stats.get(c) for c in ("zrevrange", "zscan", "hgetall", "hscan", "hkeys", "hvals")), stats
    assert stats.get("hmget", 0) <= 8 and stats.get("zrangebyscore", 0) <= 4 and stats.get("zrange", 0) <= 2, stats
    _bounded(log)


def test_peek_without_an_id_reads_the_head_only(node, r, ns, url):
    """`peek Q` (the message the consumer takes next) listed the whole queue to show one."""
    seeded(r, ns, node)
    want = qconsole("ls", "q", "--state", "ready", "--limit", "1", "--ids", "-r", url).stdout.strip()
    res, _stats, log = _observed(r, "peek", "q", "--json", url=url)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["id"] == want and want
    _bounded(log)
