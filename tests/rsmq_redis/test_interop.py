"""qconsole beside the real clients on a real Redis: Node rsmq 0.12.4 and PyRSMQ 0.6.1.

Both ways: what each client writes qconsole counts right in all four states, and what qconsole
writes (queues, messages, settings) both clients receive, delete and read attributes of.
"""

from __future__ import annotations

import json
import os
import re
import time

import pytest

from qconsole.backends import open_target
from qconsole.errors import OperationError
from qconsole.ops import Operations

from .conftest import qconsole

RSMQ_ID = re.compile(r"^[0-9a-z]{10}[A-Za-z0-9]{22}$")


def counts(url: str, queue: str) -> dict:
    out = qconsole("stats", url, "--json", "-q", queue)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "qconsole.stats/2"
    return doc["queues"][0]


def four_states(send, receive) -> None:
    """ready 2, inflight 1, expired 1, delayed 1 (5 sent, 2 received)."""
    for i in range(4):
        send(f"m{i}", None)
    send("later", 100)
    receive(100)  # m0: hidden for 100 s -> inflight
    receive(0)  # m1: received, visible again at once -> expired


def test_node_written_queue_counts_in_all_four_states(node, url):
    node.call("createQueue", qname="jobs")
    four_states(lambda m, d: node.call("sendMessage", qname="jobs", message=m, **({"delay": d} if d else {})),
                lambda vt: node.call("receiveMessage", qname="jobs", vt=vt))
    q = counts(url, "jobs")
    assert (q["ready"], q["inflight"], q["expired"], q["delayed"], q["total"]) == (2, 1, 1, 1, 5)
    assert q["rsmq"]["totalsent"] == 5 and q["rsmq"]["totalrecv"] == 2
    assert (q["rsmq"]["vt"], q["rsmq"]["delay"], q["rsmq"]["maxsize"]) == (30, 0, 65536)
    assert q["rsmq"]["received_more_than_once"] == 0
    assert 95 < q["next_expiry_s"] <= 100
    assert q["oldest_ready_age_s"] is not None and q["oldest_ready_age_s"] < 30
    attrs = node.call("getQueueAttributes", qname="jobs")
    assert attrs["msgs"] == q["total"]


def test_pyrsmq_written_queues_count_right_including_names_node_refuses(pyrsmq, node, url):
    dotted = "billing.v2.eu-west.retries." + "x" * 30  # 57 chars with dots: PyRSMQ yes, Node no
    for name in ("jobs", dotted):
        pyrsmq.createQueue(qname=name).execute()
        four_states(lambda m, d, n=name: pyrsmq.sendMessage(qname=n, message=m, **({"delay": d} if d else {})).execute(),
                    lambda vt, n=name: pyrsmq.receiveMessage(qname=n, vt=vt).execute())
        q = counts(url, name)
        assert (q["ready"], q["inflight"], q["expired"], q["delayed"], q["total"]) == (2, 1, 1, 1, 5), name
        assert q["rsmq"]["maxsize"] == 65565  # PyRSMQ's default (Node: 65536)
    res = node.run(("createQueue", {"qname": dotted}))[0]
    assert res.get("error") == "invalidFormat"  # Node refuses the name PyRSMQ made
    out = qconsole("stats", url, "--json")
    assert sorted(q["name"] for q in json.loads(out.stdout)["queues"]) == sorted(["jobs", dotted])


def test_float_delay_and_vt_from_pyrsmq(pyrsmq, url):
    pyrsmq.createQueue(qname="f", vt=1.5).execute()
    pyrsmq.sendMessage(qname="f", message="x", delay=0.5).execute()
    q = counts(url, "f")
    assert q["rsmq"]["vt"] == 1.5
    assert q["delayed"] + q["ready"] == 1


def test_what_qconsole_writes_both_clients_read(node, pyrsmq, url, redis_server, ns):
    out = qconsole("create", "work", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0, out.stderr
    assert node.call("getQueueAttributes", qname="work")["vt"] == 30
    assert pyrsmq.getQueueAttributes(qname="work").execute()["maxsize"] == 65536
    assert "work" in node.call("listQueues")
    out = qconsole("publish", "work", "hello", "--count", "3", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0, out.stderr
    ids = [line.strip() for line in out.stdout.splitlines()[1:]]
    assert len(ids) == 3 and all(RSMQ_ID.match(i) for i in ids), out.stdout
    # the id's time is Redis TIME in µs: Node's `sent` (ms) is within a second of now
    got = node.call("receiveMessage", qname="work", vt=30)
    assert got["id"] == ids[0] and got["message"] == "hello" and got["rc"] == 1
    assert abs(got["sent"] - got["fr"]) < 5000
    assert node.call("deleteMessage", qname="work", id=got["id"]) == 1
    py = pyrsmq.receiveMessage(qname="work").execute()
    assert py["id"] == ids[1] and py["message"] == "hello"
    assert pyrsmq.deleteMessage(qname="work", id=py["id"]).execute() is True
    attrs = node.call("getQueueAttributes", qname="work")
    assert (attrs["totalsent"], attrs["totalrecv"], attrs["msgs"]) == (3, 2, 1)
    # a delayed publish: neither client receives it yet; qconsole counts it delayed
    out = qconsole("publish", "work", "later", "--delay", "100", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0, out.stderr
    q = counts(url, "work")
    assert (q["ready"], q["delayed"]) == (1, 1)
    assert node.call("receiveMessage", qname="work", vt=100)["message"] == "hello"
    assert node.call("receiveMessage", qname="work") == {}
    # settings: both clients see the new vt; `modified` is Redis TIME seconds
    before = int(redis_server.client().hget(f"{ns}:work:Q", "modified"))
    time.sleep(1.1)
    out = qconsole("config", "work", "vt=60", "maxsize=-1", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0, out.stderr
    attrs = node.call("getQueueAttributes", qname="work")
    assert attrs["vt"] == 60 and attrs["maxsize"] == -1 and attrs["modified"] > before
    assert pyrsmq.getQueueAttributes(qname="work").execute()["vt"] == 60.0


@pytest.mark.parametrize("bad", ["vt=10000000", "delay=-1", "maxsize=1023", "maxsize=65537", "vt=1.5", "color=red",
                                 "vt=--5", "maxsize=-" + "9" * 400])
def test_config_out_of_rsmq_bounds_is_one_line(node, url, bad):
    node.call("createQueue", qname="q")
    out = qconsole("config", "q", bad, "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr


def test_realtime_publish(node, url, redis_server, ns):
    node.call("createQueue", qname="rt")
    sub = redis_server.client().pubsub()
    sub.subscribe(f"{ns}:rt:rt")
    assert sub.get_message(timeout=2)["type"] == "subscribe"
    out = qconsole("publish", "rt", "x", "--realtime", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0, out.stderr
    msg = sub.get_message(timeout=5)
    assert msg and msg["type"] == "message" and msg["data"] == b"1"
    sub.close()


def test_peek_changes_nothing(node, url, r, ns):
    node.call("createQueue", qname="p")
    node.call("sendMessage", qname="p", message=json.dumps({"a": 1}))
    node.call("receiveMessage", qname="p", vt=0)
    before = (r.hgetall(f"{ns}:p:Q"), r.zrange(f"{ns}:p", 0, -1, withscores=True))
    out = qconsole("peek", "p", "--root", url, "--json")
    assert out.returncode == 2  # the only message is expired, not ready: nothing "next"
    mid = node.call("getQueueAttributes", qname="p") and r.zrange(f"{ns}:p", 0, 0)[0].decode()
    out = qconsole("peek", "p", mid, "--root", url, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["payload"] == {"a": 1} and doc["state"] == "expired" and doc["root"] == url
    assert doc.get("receive_count") == 1
    assert (r.hgetall(f"{ns}:p:Q"), r.zrange(f"{ns}:p", 0, -1, withscores=True)) == before


def test_requeue_makes_an_inflight_message_receivable_now(node, url):
    node.call("createQueue", qname="q")
    node.call("sendMessage", qname="q", message="x")
    got = node.call("receiveMessage", qname="q", vt=1000)
    assert node.call("receiveMessage", qname="q") == {}
    out = qconsole("requeue", "q", "--all", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0 and "1 done" in out.stdout, out.stdout + out.stderr
    again = node.call("receiveMessage", qname="q", vt=1000)
    assert again["id"] == got["id"] and again["rc"] == 2 and again["fr"] == got["fr"]


def test_delete_and_restore_exactly(node, url, r, ns, tmp_path):
    node.call("createQueue", qname="q")
    for i in range(5):
        node.call("sendMessage", qname="q", message=f"m{i}")
    node.call("receiveMessage", qname="q", vt=1000)
    node.call("receiveMessage", qname="q", vt=0)
    node.call("sendMessage", qname="q", message="d", delay=500)
    hkey, zkey = f"{ns}:q:Q", f"{ns}:q"
    snapshot = lambda: ({k: v for k, v in r.hgetall(hkey).items() if k not in (b"modified",)},  # noqa: E731
                        r.zrange(zkey, 0, -1, withscores=True))
    before = snapshot()
    audit = tmp_path / "audit.log"
    out = qconsole("purge", "q", "--yes", "--root", url, "--audit-log", str(audit))
    assert out.returncode == 0 and "6 done" in out.stdout, out.stdout + out.stderr
    assert r.zcard(zkey) == 0 and r.hlen(hkey) == 7  # only the queue's attributes remain
    assert node.call("receiveMessage", qname="q") == {}
    out = qconsole("trash", "list", "--json", "--root", url)
    batches = json.loads(out.stdout)
    assert len(batches) == 1 and batches[0]["count"] == 6 and batches[0]["queue"] == "q"
    listed = open_target(url).trash_list()[0]  # what the batch holds (the trash screen shows it)
    assert len(listed.ids) == 6 and {m.encode() for m in listed.ids} == {m for m, _s in before[1]}
    out = qconsole("trash", "restore", "--root", url, "--audit-log", str(audit))
    assert out.returncode == 0 and "6 done" in out.stdout, out.stdout + out.stderr
    assert snapshot() == before
    assert [k for k in r.scan_iter(f"{ns}:qconsole*")] == []  # the emptied batch is gone
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    assert [x["action"] for x in lines] == ["purge", "trash restore"]
    assert all(x["root"] == url for x in lines)


def test_move_between_queues(node, url, r, ns):
    node.call("createQueue", qname="dlq")
    node.call("createQueue", qname="main")
    ids = [node.call("sendMessage", qname="dlq", message=f"m{i}") for i in range(3)]
    node.call("receiveMessage", qname="dlq", vt=0)
    out = qconsole("move", "dlq", "main", "--all", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0 and "3 done" in out.stdout, out.stdout + out.stderr
    got = [node.call("receiveMessage", qname="main") for _ in range(3)]
    assert [g["id"] for g in got] == ids and all(g["rc"] == 1 for g in got)
    assert node.call("getQueueAttributes", qname="dlq")["msgs"] == 0
    assert node.call("getQueueAttributes", qname="main")["totalsent"] == 3
    assert r.hlen(f"{ns}:dlq:Q") == 7  # vt delay maxsize created modified totalsent totalrecv


def test_changes_skip_what_a_consumer_took_meanwhile(node, url, r, ns):
    node.call("createQueue", qname="q")
    for i in range(4):
        node.call("sendMessage", qname="q", message=f"m{i}")
    for _ in range(3):
        node.call("receiveMessage", qname="q", vt=1000)
    backend = open_target(url)
    ops = Operations(backend, audit_log="/dev/null")
    scan = backend.scan_queue("q", collect=True)
    held = scan.held_messages()
    assert len(held) == 3
    # meanwhile: one deleted by its consumer, one received again (rc 2), one left alone
    node.call("deleteMessage", qname="q", id=held[0].id)
    node.call("changeMessageVisibility", qname="q", id=held[1].id, vt=0)
    node.call("receiveMessage", qname="q", vt=1000)  # takes held[1] again (visible, oldest score)
    outcomes = dict(backend.requeue("q", held))
    assert outcomes[held[0].id] == "already consumed"
    assert outcomes[held[1].id] == "changed underneath"
    assert outcomes[held[2].id] is None
    # remove: the same checks; what a consumer received after the scan stays, nothing is lost
    scan2 = backend.scan_queue("q", collect=True)
    taken = node.call("receiveMessage", qname="q", vt=1000)  # takes a visible one meanwhile
    outcomes, batch = backend.remove("purge", "q", scan2.messages, use_trash=True, user="t")
    assert dict(outcomes)[taken["id"]] == "changed underneath"
    assert [mid for mid, why in outcomes if why] == [taken["id"]]
    assert r.zrange(f"{ns}:q", 0, -1) == [taken["id"].encode()]
    assert ops.trash_restore(batch).done
    assert r.zcard(f"{ns}:q") == len(scan2.messages)
    backend.close()


def test_ls_and_peek_next(node, url):
    node.call("createQueue", qname="q")
    node.call("sendMessage", qname="q", message="first")
    node.call("sendMessage", qname="q", message="second", delay=60)
    out = qconsole("ls", "q", "--root", url, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [m["state"] for m in doc["messages"]] == ["ready", "delayed"]
    assert doc["messages"][0]["size_bytes"] == 5 and doc["root"] == url
    out = qconsole("peek", "q", "--root", url)
    assert out.returncode == 0 and "first" in out.stdout, out.stderr


def test_delete_queue_as_rsmq(node, url, r, ns):
    node.call("createQueue", qname="gone")
    node.call("sendMessage", qname="gone", message="x")
    backend = open_target(url)
    with pytest.raises(OperationError, match="a message arrived meanwhile"):
        backend.delete_queue("gone")  # not empty: refused by the deleting script itself
    assert backend.delete_queue("gone", force=True) == 2
    assert node.run(("getQueueAttributes", {"qname": "gone"}))[0]["error"] == "queueNotFound"
    assert "gone" not in node.call("listQueues")
    backend.close()


def test_a_message_sent_after_the_emptiness_check_is_not_deleted_with_the_queue(pyrsmq, url, monkeypatch):
    """delete-queue checks the queue is empty, then deletes it: a message sent in between was
    acknowledged to its producer and went with the queue."""
    pyrsmq.createQueue(qname="racy").execute()
    backend = open_target(url)
    real = backend.scan_queue
    sent = []

    def scan_then_a_send(*a, **k):
        scan = real(*a, **k)
        sent.append(pyrsmq.sendMessage(qname="racy", message="acknowledged").execute())
        return scan

    monkeypatch.setattr(backend, "scan_queue", scan_then_a_send)
    ops = Operations(backend, audit_log=os.devnull)
    with pytest.raises(OperationError, match="a message arrived meanwhile"):
        ops.delete_queue("racy")
    assert sent and pyrsmq.receiveMessage(qname="racy").execute()["message"] == "acknowledged"
    backend.close()


@pytest.mark.parametrize("exact_limit", [0, 1_000_000])
def test_counting_paths_agree(pyrsmq, url, r, ns, monkeypatch, exact_limit):
    """Counting by receive counts and by the HLEN arithmetic give the same counts as the
    message-by-message listing (which operations use), chunk boundaries included."""
    from qconsole.backends.rsmq import backend as rb

    monkeypatch.setattr(rb, "CHUNK", 7)  # many chunks from few messages
    monkeypatch.setattr(rb, "EXACT_VISIBLE", exact_limit)
    pyrsmq.createQueue(qname="c").execute()
    for i in range(60):
        pyrsmq.sendMessage(qname="c", message=f"m{i}", **({"delay": 100} if i % 9 == 0 else {})).execute()
    took = [pyrsmq.receiveMessage(qname="c", vt=0 if i % 3 else 100).execute()["id"] for i in range(25)]
    for mid in took[:6]:  # as if received again (both states get some rc 2)
        r.hincrby(f"{ns}:c:Q", f"{mid}:rc", 1)
    backend = open_target(url)
    now = backend.now()
    listed = backend.scan_queue("c", now, collect=True)
    counted = backend.scan_queue("c", now)
    assert counted.counts == listed.counts
    assert sum(counted.counts.values()) == 60 and all(counted.counts[s] for s in ("ready", "inflight", "expired", "delayed"))
    assert counted.next_deadline == listed.next_deadline and counted.oldest_ready_created == listed.oldest_ready_created
    assert counted.extras["counted"] == ("exact" if exact_limit else "hlen")
    if exact_limit:
        assert counted.extras["received_more_than_once"] == sum(m.rc > 1 for m in listed.messages) > 0
    # a field no client writes: the HLEN arithmetic notices and counts exactly instead
    r.hset(f"{ns}:c:Q", "someone-elses-field", "x")
    odd = backend.scan_queue("c", now)
    assert odd.counts == listed.counts and (exact_limit or odd.warnings)
    backend.close()


def test_where_node_and_pyrsmq_disagree(node, pyrsmq, url, r, ns):
    """Recorded differences between the two reference clients (qconsole reads what both write)."""
    node.call("createQueue", qname="n")
    pyrsmq.createQueue(qname="p").execute()
    # maxsize default: Node 65536, PyRSMQ 65565 (and PyRSMQ accepts up to 65565, Node refuses > 65536)
    assert int(r.hget(f"{ns}:n:Q", "maxsize")) == 65536 and int(r.hget(f"{ns}:p:Q", "maxsize")) == 65565
    assert node.run(("setQueueAttributes", {"qname": "n", "maxsize": 65565}))[0]["error"] == "invalidValue"
    # deleteMessage of a message never received: Node says 1, PyRSMQ False -- both deleted it
    mid = node.call("sendMessage", qname="n", message="x")
    assert node.call("deleteMessage", qname="n", id=mid) == 1
    pid = pyrsmq.sendMessage(qname="p", message="x").execute()
    assert pyrsmq.deleteMessage(qname="p", id=pid).execute() is False
    assert r.zcard(f"{ns}:p") == 0 and not r.hexists(f"{ns}:p:Q", pid)
    # a message sent this second: Node's getQueueAttributes counts it hidden (second resolution),
    # qconsole (ms, as both clients' receive) counts it ready
    node.call("sendMessage", qname="n", message="now")
    attrs = node.call("getQueueAttributes", qname="n")
    q = counts(url, "n")
    assert q["ready"] == 1 and attrs["msgs"] == 1 and attrs["hiddenmsgs"] in (0, 1)


def test_delete_queue_command(node, url):
    node.call("createQueue", qname="old")
    node.call("sendMessage", qname="old", message="x")
    out = qconsole("delete-queue", "old", "--yes", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 2 and "purge it first" in out.stderr and out.stderr.count("\n") == 1
    out = qconsole("delete-queue", "old", "--yes", "--force", "--root", url, "--audit-log", "/dev/null")
    assert out.returncode == 0, out.stderr
    assert "old" not in node.call("listQueues")
    out = qconsole("delete-queue", "old", "--yes", "--root", url, "--read-only")
    assert out.returncode == 2 and "read-only" in out.stderr


def test_infinite_scores_planted_by_hand_count_and_show_without_a_traceback(node, r, url, ns):
    """ZADD accepts +inf and -inf, which no client writes: +inf is never delivered (hidden),
    -inf always first; every command still answers, with a warning and no deadline shown."""
    node.call("createQueue", qname="inf")
    for i in range(3):
        node.call("sendMessage", qname="inf", message=f"m{i}")
    r.zadd(f"{ns}:inf", {"zzzzzzzzzzplus": float("inf"), "0000000000minus": float("-inf")})
    r.hset(f"{ns}:inf:Q", mapping={"zzzzzzzzzzplus": "never", "zzzzzzzzzzplus:rc": "1",
                                    "0000000000minus": "first", "0000000000minus:rc": "1"})
    doc = json.loads(qconsole("stats", url, "--json").stdout)
    q = next(q for q in doc["queues"] if q["name"] == "inf")
    assert q["total"] == 5 and q["inflight"] == 1 and q["ready"] + q["expired"] == 4
    assert any("+inf" in w for w in q["warnings"])
    for args in (("ls", "inf", "-r", url), ("ls", "inf", "-r", url, "--json"), ("peek", "inf", "-r", url),
                 ("peek", "inf", "zzzzzzzzzzplus", "-r", url), ("peek", "inf", "zzzzzzzzzzplus", "-r", url, "--json"),
                 ("stats", url)):
        res = qconsole(*args)
        assert res.returncode == 0 and "Traceback" not in res.stderr and "internal error" not in res.stderr, (args, res.stderr)
    listed = json.loads(qconsole("ls", "inf", "-r", url, "--json").stdout)["messages"]
    plus = next(m for m in listed if m["id"] == "zzzzzzzzzzplus")
    assert plus["state"] == "inflight" and plus["deadline"] is None
    assert listed[0]["id"] == "0000000000minus"  # -inf: what the consumer meets first
    peeked = json.loads(qconsole("peek", "inf", "zzzzzzzzzzplus", "-r", url, "--json").stdout)  # strict JSON
    assert peeked["id"] == "zzzzzzzzzzplus"


def _strict(text: str):
    """JSON as Node's JSON.parse reads it: NaN/Infinity refused."""
    def refuse(name):
        raise AssertionError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999", "1e300"])
def test_non_finite_and_absurd_numbers_in_a_queue_hash_are_unreadable_not_fatal(node, r, url, ns, value):
    """The queue's figures and a message's first-receive time planted as inf/nan/1e999: every
    command answers (no internal error), and --json stays JSON a strict parser reads."""
    node.call("createQueue", qname="odd")
    node.call("createQueue", qname="good")
    mid = node.call("sendMessage", qname="odd", message="hello")
    node.call("sendMessage", qname="odd", message="other")
    r.hset(f"{ns}:odd:Q", mapping={"totalsent": value, "totalrecv": value, "created": value, "modified": value,
                                   "vt": value, "delay": value, f"{mid}:rc": "1", f"{mid}:fr": value})
    r.zadd(f"{ns}:odd", {mid: int(time.time() * 1000) + 10_000_000})  # held, as a receive leaves it
    for args in (("stats", url), ("stats", url, "--json"), ("check", url), ("ls", "odd", "-r", url),
                 ("ls", "odd", "-r", url, "--json"), ("peek", "odd", mid, "-r", url), ("config", "odd", "-r", url),
                 ("config", "odd", "-r", url, "--json"), ("requeue", "odd", mid, "-r", url)):
        res = qconsole(*args)
        assert res.returncode in (0, 1), (args, res.stdout, res.stderr)  # check: 1 is WARNING
        assert "internal error" not in res.stderr and "Traceback" not in res.stderr, (args, res.stderr)
        if "--json" in args:
            _strict(res.stdout)
    doc = _strict(qconsole("stats", url, "--json").stdout)
    assert {q["name"] for q in doc["queues"]} == {"odd", "good"}
    assert qconsole("purge", "odd", "--yes", "-r", url).returncode == 0


def test_a_message_sent_between_the_count_and_the_read_hides_no_other(pyrsmq, url, r, ns, monkeypatch):
    """A client's send (or delete) between the scan's counts and its reads shifts every rank:
    a read by rank then lost the newest hidden message. Reads by score lose none."""
    pyrsmq.createQueue(qname="live").execute()
    for i in range(3):
        pyrsmq.sendMessage(qname="live", message=f"ready {i}").execute()
    for i in range(3):
        pyrsmq.sendMessage(qname="live", message=f"later {i}", delay=100).execute()
    backend = open_target(url)
    real = backend._pipe
    sent = []

    def pipe():  # the counts' round trip, then another client's send
        p = real()
        execute = p.execute

        def and_then_a_send():
            out = execute()
            if not sent:
                sent.append(pyrsmq.sendMessage(qname="live", message="meanwhile").execute())
            return out

        p.execute = and_then_a_send
        return p

    later = {m.decode() for m in r.zrangebyscore(f"{ns}:live", f"({int(time.time() * 1000)}", "+inf")}
    assert len(later) == 3
    monkeypatch.setattr(backend, "_pipe", pipe)
    scan = backend.scan_queue("live", collect=True)
    # every delayed message is listed (the one sent meanwhile is delayed or ready, as its score
    # falls after the scan's clock or in its millisecond)
    assert sent and later <= {m.id for m in scan.messages if m.state == "delayed"}, scan.counts
    assert len(scan.messages) == 7 == sum(scan.counts.values())
    backend.close()


def test_reading_by_score_in_chunks_takes_every_member_once_across_tied_scores(r, url, ns, monkeypatch):
    """The score cursor of a chunked read: runs of one score longer than a chunk, and ones
    that end exactly at a chunk's end, are each read once, in Redis's order."""
    from qconsole.backends.rsmq import backend as rb

    monkeypatch.setattr(rb, "CHUNK", 2)
    monkeypatch.setattr(rb, "PIPELINE", 2)  # 4 members a read
    key = f"{ns}:scores"
    scores = [5] * 9 + [6] * 4 + [7, 8, 8, 8, 8] + [9] * 3 + [float("inf")] * 2
    r.zadd(key, {f"m{i:02d}": s for i, s in enumerate(scores)})
    backend = open_target(url)
    for low, high in (("-inf", "+inf"), ("(5", "+inf"), ("-inf", "8"), ("6", "(9")):
        want = r.zrangebyscore(key, low, high, withscores=True)
        assert backend._by_score(key, low, high) == want, (low, high)
    backend.close()


def test_a_queue_whose_key_has_the_wrong_type_is_its_own_error_not_the_namespaces(node, r, url, ns):
    node.call("createQueue", qname="good")
    node.call("sendMessage", qname="good", message="x")
    r.sadd(f"{ns}:QUEUES", "strq")
    r.set(f"{ns}:strq:Q", "not a hash")
    res = qconsole("stats", url, "--json")
    assert "internal error" not in res.stderr and res.stdout, res.stderr
    doc = _strict(res.stdout)
    byname = {q["name"]: q for q in doc["queues"]}
    assert byname["good"]["total"] == 1
    assert byname["strq"]["errors"] and "not of the type rsmq writes" in byname["strq"]["errors"][0]
    check = qconsole("check", url)  # Nagios: a warning naming the queue, the others still measured
    assert check.returncode == 1 and "strq: 1 scan error" in check.stdout and "good_ready=1" in check.stdout, check


@pytest.mark.parametrize("exact_limit", [0, 1_000_000])
def test_a_receive_between_the_counts_and_the_reads_is_counted_once(pyrsmq, url, r, ns, monkeypatch, exact_limit):
    """A receive moves a member from the visible range to the hidden one. Counted from the
    first round trip's figures and a later read, it was counted twice (totals above ZCARD);
    read hidden-then-visible, not at all."""
    from qconsole.backends.rsmq import backend as rb

    monkeypatch.setattr(rb, "EXACT_VISIBLE", exact_limit)
    pyrsmq.createQueue(qname="busy").execute()
    for i in range(6):
        pyrsmq.sendMessage(qname="busy", message=f"m{i}").execute()
    backend = open_target(url)
    real = backend._pipe
    received = []

    def pipe():
        p = real()
        execute = p.execute

        def and_then_a_receive():
            out = execute()
            if not received:
                received.append(pyrsmq.receiveMessage(qname="busy", vt=100).execute())
            return out

        p.execute = and_then_a_receive
        return p

    monkeypatch.setattr(backend, "_pipe", pipe)
    scan = backend.scan_queue("busy")
    assert received and sum(scan.counts.values()) == r.zcard(f"{ns}:busy") == 6, scan.counts
    assert scan.counts["inflight"] in (0, 1)  # as the reads met it: before or after its receive
    backend.close()
