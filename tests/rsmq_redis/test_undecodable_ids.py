"""Members whose bytes are not UTF-8, on a real Redis beside messages of the Node client.

Anyone can ZADD any bytes as a member. qconsole decodes ids with surrogateescape; every id it
sends back to Redis must be those same bytes (redis-py and hiredis refuse to encode a lone
surrogate: `ls` and `purge` ended in a traceback / "internal error"). Outputs show the bytes
as ``\\xNN`` escapes, JSON stays ASCII, and the changes touch exactly the member asked for."""

from __future__ import annotations

import json

from .conftest import qconsole

#: not UTF-8; a truncated sequence; U+DCFF and U+D800 encoded as UTF-8 (surrogates: not valid UTF-8)
ODD = (b"\xff\xfe", b"ok\xc3", b"\xed\xb3\xbf", b"\xed\xa0\x80")
IN_FLIGHT = b"\xff\xfe"  # received once, hidden for 10 000 s; the others are visible, never received


def arg(member: bytes) -> str:
    """The id as Python (and so qconsole) sees the command-line argument made of those bytes."""
    return member.decode("utf-8", "surrogateescape")


def shown(member: bytes) -> str:
    """How outputs print the id: undecodable bytes as \\xNN."""
    return "".join(chr(b) if b < 0x80 else f"\\x{b:02x}" for b in member)


def plant(node, r, ns: str) -> list[str]:
    """Queue jobs: three messages of the Node client (one received) and the ODD members."""
    node.call("createQueue", qname="jobs")
    node.call("createQueue", qname="dlq")
    sent = [node.call("sendMessage", qname="jobs", message=f"m{i}") for i in range(3)]
    node.call("receiveMessage", qname="jobs", vt=1000)
    secs, micros = r.time()
    now_ms = secs * 1000 + micros // 1000
    for m in ODD:
        held = m == IN_FLIGHT
        r.zadd(f"{ns}:jobs", {m: now_ms + 10_000_000 if held else now_ms - 1000})
        r.hset(f"{ns}:jobs:Q", m, b"body of " + m)
        if held:
            r.hset(f"{ns}:jobs:Q", mapping={m + b":rc": 1, m + b":fr": now_ms})
    return sent


def messages(r, ns: str, queue: str) -> dict[bytes, tuple[float, bytes | None, bytes | None, bytes | None]]:
    """Every member of ``queue`` with its score, body, rc and fr, read raw."""
    out = {}
    for m, score in r.zrange(f"{ns}:{queue}", 0, -1, withscores=True):
        body, rc, fr = r.hmget(f"{ns}:{queue}:Q", [m, m + b":rc", m + b":fr"])
        out[m] = (score, body, rc, fr)
    return out


def clean(res) -> None:
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    assert len(res.stderr.splitlines()) <= 1, res.stderr


def test_read_commands_show_undecodable_ids_escaped(node, url, r, ns):
    sent = plant(node, r, ns)
    before = messages(r, ns, "jobs")

    res = qconsole("stats", url, "--json")
    clean(res)
    q = next(q for q in json.loads(res.stdout)["queues"] if q["name"] == "jobs")
    assert (q["ready"], q["inflight"], q["expired"], q["total"]) == (5, 2, 0, 7)

    res = qconsole("ls", "jobs", "-r", url)  # piped: plain lines, full ids
    clean(res)
    assert res.returncode == 0
    assert len(res.stdout.splitlines()) == 1 + 3 + len(ODD)  # the header, one line a message
    assert set(res.stdout.split()) >= {*sent, *(shown(m) for m in ODD)}
    assert "\\xff\\xfe" in res.stdout and "ok\\xc3" in res.stdout and "\\xed\\xa0\\x80" in res.stdout

    res = qconsole("ls", "jobs", "-r", url, env={"TTY_COMPATIBLE": "1"})  # the terminal table
    clean(res)
    assert res.returncode == 0 and "ok\\xc3" in res.stdout and "\\xed\\xb3\\xbf" in res.stdout

    raw = qconsole("ls", "jobs", "-r", url, "--json")
    clean(raw)
    assert raw.stdout.isascii()  # valid UTF-8, surrogates as \udcNN escapes: round-trip to the bytes
    doc = json.loads(raw.stdout)
    assert {m["id"].encode("utf-8", "surrogateescape") for m in doc["messages"]} == \
        {*ODD, *(s.encode() for s in sent)}
    assert {m["id"]: m["size_bytes"] for m in doc["messages"]}[arg(b"ok\xc3")] == len(b"body of ok\xc3")

    for m in ODD:  # addressed by its bytes on the command line (bash: $'\xff\xfe')
        res = qconsole("peek", "jobs", arg(m), "-r", url)
        clean(res)
        assert res.returncode == 0 and f"body of {shown(m)}" in res.stdout, res.stdout
        assert ["id", shown(m)] in [line.split() for line in res.stdout.splitlines()]
    res = qconsole("peek", "jobs", arg(IN_FLIGHT), "-r", url, "--json")
    clean(res)
    doc = json.loads(res.stdout)
    assert doc["id"] == arg(IN_FLIGHT) and doc["state"] == "inflight" and doc["receive_count"] == 1

    # typed as shown (backslash, x, f, f): not that id; the one line says how to type it
    res = qconsole("peek", "jobs", "\\xff\\xfe", "-r", url)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1
    assert "no message" in res.stderr and "$'\\xff\\xfe' in bash" in res.stderr

    assert messages(r, ns, "jobs") == before  # reading changed nothing


def test_changes_reach_exactly_the_undecodable_member(node, url, r, ns, tmp_path):
    plant(node, r, ns)
    audit = str(tmp_path / "audit.log")
    before = messages(r, ns, "jobs")

    def others_unchanged(*changed: bytes) -> None:
        now = messages(r, ns, "jobs")
        assert {k: v for k, v in now.items() if k not in changed} == \
            {k: v for k, v in before.items() if k not in changed}

    # requeue the in-flight one: visible now, rc and fr kept
    res = qconsole("requeue", "jobs", arg(IN_FLIGHT), "-r", url, "--audit-log", audit)
    clean(res)
    assert res.returncode == 0 and res.stdout == "requeue jobs: 1 done\n"
    secs, micros = r.time()
    assert r.zscore(f"{ns}:jobs", IN_FLIGHT) <= secs * 1000 + micros // 1000
    assert r.hmget(f"{ns}:jobs:Q", [IN_FLIGHT + b":rc", IN_FLIGHT + b":fr"]) == list(before[IN_FLIGHT][2:])
    others_unchanged(IN_FLIGHT)
    before = messages(r, ns, "jobs")

    # delete one, restore it: byte-identical member, score, body
    res = qconsole("delete", "jobs", arg(b"ok\xc3"), "--yes", "-r", url, "--audit-log", audit)
    clean(res)
    assert res.returncode == 0 and res.stdout.startswith("delete jobs: 1 done")
    assert r.zscore(f"{ns}:jobs", b"ok\xc3") is None and r.hget(f"{ns}:jobs:Q", b"ok\xc3") is None
    others_unchanged(b"ok\xc3")
    res = qconsole("trash", "restore", "-r", url, "--audit-log", audit)
    clean(res)
    assert res.returncode == 0 and "1 done" in res.stdout
    assert messages(r, ns, "jobs") == before

    # move one to dlq: the same bytes arrive there
    res = qconsole("move", "jobs", "dlq", arg(b"\xed\xb3\xbf"), "-r", url, "--audit-log", audit)
    clean(res)
    assert res.returncode == 0 and res.stdout == "move jobs to dlq: 1 done\n"
    assert [m for m in r.zrange(f"{ns}:dlq", 0, -1)] == [b"\xed\xb3\xbf"]
    assert r.hget(f"{ns}:dlq:Q", b"\xed\xb3\xbf") == b"body of \xed\xb3\xbf"
    others_unchanged(b"\xed\xb3\xbf")
    before = messages(r, ns, "jobs")

    # purge takes all of them; trash restore brings every one back as it was
    res = qconsole("purge", "jobs", "--yes", "-r", url, "--audit-log", audit)
    clean(res)
    assert res.returncode == 0 and res.stdout.startswith(f"purge jobs: {len(before)} done"), res.stdout
    assert r.zcard(f"{ns}:jobs") == 0
    res = qconsole("trash", "restore", "-r", url, "--audit-log", audit)
    clean(res)
    assert res.returncode == 0 and f"{len(before)} done" in res.stdout
    assert messages(r, ns, "jobs") == before

    # the audit log names them with the same escapes as JSON, one valid line each
    with open(audit, "rb") as fh:
        lines = [json.loads(line.decode("ascii")) for line in fh]
    assert [d["action"] for d in lines] == ["requeue", "delete", "trash restore", "move", "purge", "trash restore"]
    assert lines[0]["ids"] == [arg(IN_FLIGHT)] and lines[1]["ids"] == [arg(b"ok\xc3")]

