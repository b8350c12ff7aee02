"""`qconsole report redis://…`: the executors read the namespace by rank ranges (ZRANGE) and
HMGET, on a real redis-server with messages in every state written by PyRSMQ. The summary's
counts equal `qconsole stats --json`'s; receive counts are the redelivery measure; the password
reaches the executors without being in the chunk descriptors or any output."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from qconsole.backends import open_target
from qconsole.report import inventory

from redis_peer import RedisServer

from .conftest import qconsole

PASSWORD = "pw-Zq8!report"


def fill(pyrsmq, queue: str, ready: int = 3) -> None:
    """``queue``: ``ready`` ready, 1 in flight (1 h), 1 expired received 3 times, 2 delayed (1 h)."""
    pyrsmq.createQueue(qname=queue).execute()
    pyrsmq.sendMessage(qname=queue, message="held").execute()
    pyrsmq.receiveMessage(qname=queue, vt=3600).execute()
    pyrsmq.sendMessage(qname=queue, message='{"poison": true}').execute()
    for _ in range(3):
        pyrsmq.receiveMessage(qname=queue, vt=0).execute()
    for i in range(ready):
        pyrsmq.sendMessage(qname=queue, message=json.dumps({"n": i})).execute()
    pyrsmq.sendMessage(qname=queue, message="dup", delay=3600).execute()
    pyrsmq.sendMessage(qname=queue, message="dup", delay=3600).execute()
    time.sleep(0.01)


def test_inventory_columns_by_rank_ranges(pyrsmq, url, ns) -> None:
    """The chunks cover every member once, with the scan's states, rc in requeue_counter."""
    fill(pyrsmq, "jobs", ready=5)
    handle = open_target(url)
    now = handle.now()
    location = inventory.location_of("rsmq", url, handle)
    chunks = list(inventory.list_chunks("rsmq", location, "jobs", now, size=3))
    assert [c["items"]["ranks"] for c in chunks] == [[0, 2], [3, 5], [6, 8]]
    assert all(set(c) == {"store", "location", "queue", "now", "seq", "files", "items"} for c in chunks)
    rows = [row for c in chunks for row in zip(*inventory.read_chunk(c))]
    names = inventory.COLUMN_NAMES
    by_id = {row[names.index("id")]: dict(zip(names, row)) for row in rows}
    scan = handle.scan_queue("jobs", now=now, collect=True)
    assert {m.id: m.state for m in scan.messages} == {i: r["state"] for i, r in by_id.items()}
    assert len(rows) == 9
    for m in scan.messages:
        r = by_id[m.id]
        assert r["requeue_counter"] == m.rc and r["layout"] == "rsmq" and r["file"] == m.id
        assert r["expires_at"] == (None if m.state == "ready" else round(m.score * 1000))
        assert r["size_bytes"] == len(handle.read_payload(m, None).body)
    poison = [r for r in by_id.values() if r["requeue_counter"] == 3]
    assert len(poison) == 1 and poison[0]["state"] == "expired" and poison[0]["payload_sha256"]
    assert inventory.redelivery_field("rsmq") == "requeue_counter" and not inventory.records_sender("rsmq")


def test_inventory_rows_of_scores_no_column_holds(pyrsmq, url, ns, r) -> None:
    """±inf or 1e300 planted as scores: a row with no expiry, not a failed report."""
    fill(pyrsmq, "odd", ready=1)
    ids = [m.decode() for m in r.zrange(f"{ns}:odd", 0, 2)]
    r.zadd(f"{ns}:odd", {ids[0]: float("inf"), ids[1]: float("-inf"), ids[2]: 1e300})
    handle = open_target(url)
    location = inventory.location_of("rsmq", url, handle)
    chunks = list(inventory.list_chunks("rsmq", location, "odd", handle.now(), size=4))
    names = inventory.COLUMN_NAMES
    rows = {row[names.index("id")]: dict(zip(names, row)) for c in chunks for row in zip(*inventory.read_chunk(c))}
    assert len(rows) == 5
    assert rows[ids[0]]["expires_at"] is None and rows[ids[2]]["expires_at"] is None
    assert rows[ids[1]]["state"] in ("ready", "expired")  # -inf: what a consumer meets first


@pytest.mark.spark
def test_cli_report_on_a_password_protected_namespace_equals_stats(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from rsmq import RedisSMQ

    from qconsole.report import spark_job

    if spark_job.java_missing():
        pytest.skip("Java (17 or 21) not found")
    server = RedisServer(tmp_path / "redis", ["--requirepass", PASSWORD])
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=server.port, password=PASSWORD, protocol=2)
        pyrsmq = RedisSMQ(client=client, ns="rep")
        fill(pyrsmq, "jobs")
        fill(pyrsmq, "mail", ready=1)
        pyrsmq.createQueue(qname="empty").execute()
        url = f"redis://:{PASSWORD}@127.0.0.1:{server.port}?ns=rep"
        out_dir = tmp_path / "out"
        env = {"SPARK_LOCAL_IP": "127.0.0.1", "REDISCLI_AUTH": ""}
        stats = qconsole("stats", url, "--json", env=env)
        assert stats.returncode == 0, stats.stderr
        rep = qconsole("report", url, "--out", str(out_dir), "--master", "local[2]", "--poison-threshold", "3",
                       env=env, timeout=600)
        assert rep.returncode == 0, rep.stderr[-3000:]
        doc = json.loads((out_dir / "summary.json").read_text())
        want = {q["name"]: q for q in json.loads(stats.stdout)["queues"]}
        got = {q["name"]: q for q in doc["queues"]}
        assert set(got) == set(want) == {"jobs", "mail", "empty"}
        for name, q in want.items():
            counts = got[name]["counts"]
            assert {s: counts[s] for s in ("ready", "inflight", "expired", "delayed", "total")} == \
                {s: q[s] for s in ("ready", "inflight", "expired", "delayed", "total")}, name
        assert (got["jobs"]["counts"]["ready"], got["jobs"]["counts"]["delayed"]) == (3, 2)
        # the receive count is the redelivery measure: the message received 3 times is poison
        assert got["jobs"]["poison"]["count"] == 1 and got["jobs"]["poison"]["field"] == "requeue_counter"
        assert got["jobs"]["duplicates"]["messages"] == 2
        assert doc["layout"] == "rsmq" and doc["root"] == f"redis://127.0.0.1:{server.port}?ns=rep"
        # the password is nowhere: outputs, summary, Parquet
        assert PASSWORD not in rep.stdout + rep.stderr + stats.stdout
        for path in out_dir.rglob("*"):
            if path.is_file():
                assert PASSWORD.encode() not in path.read_bytes(), path
    finally:
        server.stop()
