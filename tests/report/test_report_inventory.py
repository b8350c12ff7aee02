"""The plain-Python half of `report`: the inventory scanner and the summary, no Spark."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from report_roots import CORRUPT_DDMQ, build_ddmq_root, build_vsqs_root, history_lines
from qconsole.report import history, inventory, summary
from qconsole.backends import open_target as Root
from qconsole.states import FOREIGN, INFLIGHT, READY, STATES, WRITING

IX = {n: i for i, n in enumerate(inventory.COLUMN_NAMES)}


def _rows(root: str) -> tuple[Root, list[str], list[tuple], float]:
    handle = Root(root)
    names, _errors = handle.queue_names()
    now = time.time()
    return handle, names, inventory.scan_root_rows(handle.path, handle.layout, names, now), now


def _stats(handle: Root, names: list[str], rows: list[tuple], now: float, threshold: int = 3) -> dict:
    redelivery = inventory.redelivery_field(handle.layout)
    queues = [(n, handle.layout, redelivery) for n in names]
    return {s["name"]: s for s in summary.queue_stats(rows, queues, now, threshold)}


def test_percentile_is_linear_between_closest_ranks():
    assert summary.percentile([], 0.5) is None
    assert summary.percentile([7], 0.95) == 7
    assert summary.percentile([3, 3, 5, 10, 40, 100], 0.5) == 7.5  # (5 + 10) / 2
    assert summary.percentile([100, 3, 40, 3, 10, 5], 0.95) == pytest.approx(85.0)  # 40 + .75 * 60


def test_ddmq_rows_and_summary_match_the_scan_and_hand_computed_values(tmp_path):
    info = build_ddmq_root(str(tmp_path / "dd"))
    handle, names, rows, now = _rows(str(tmp_path / "dd"))
    stats = _stats(handle, names, rows, now)
    scan = {q.name: q for q in handle.scan(now=now).queues}
    for name in names:
        assert {s: stats[name]["counts"][s] for s in STATES} == scan[name].counts
        assert stats[name]["counts"]["total"] == scan[name].total
    jobs = stats["jobs"]
    assert jobs["counts"] == {READY: 6, INFLIGHT: 1, "expired": 0, "delayed": 0, WRITING: 1, FOREIGN: 1, "total": 8}
    # payload sizes 10, 3, 3, 40, 100, 5 (the corrupt file has none)
    assert jobs["percentiles"]["size_bytes"] == {"p50": 7.5, "p95": 85.0, "p99": 97.0, "max": 100.0}
    ids = {m.message: m.id for m in info["published"] if m.message != "dup"}
    dup_ids = [m.id for m in info["published"] if m.message == "dup"]
    by_rc = {m.requeue_counter: m.id for m in info["published"] if m.message == "dup"}
    assert jobs["poison"] == {"field": "requeue_counter", "threshold": 3, "count": 2, "top": [
        {"id": by_rc[4], "redeliveries": 4},
        {"id": ids["y" * 40], "redeliveries": 3},
    ]}
    import hashlib

    assert jobs["duplicates"] == {"messages": 2, "payloads": 1,
                                  "top": [{"sha256": hashlib.sha256(b"dup").hexdigest(), "count": 2}]}
    assert len(dup_ids) == 2
    assert jobs["senders"] is None  # ddmq records no sender: nothing invented
    assert jobs["errors"] == 3  # corrupt JSON, binary payload, foreign file
    # ages: 8 messages created at known times (one qconsole temp file has none)
    created = sorted(now - r[IX["created_at"]].timestamp() for r in rows
                     if r[IX["queue"]] == "jobs" and r[IX["created_at"]] is not None)
    assert len(created) == 7
    whole = [int(a) for a in created]  # age percentiles are over whole seconds; max is exact
    p50 = whole[3]  # pos 0.5 * 6 = 3
    p95 = whole[5] + 0.7 * (whole[6] - whole[5])  # pos 5.7
    p99 = whole[5] + 0.94 * (whole[6] - whole[5])  # pos 5.94
    assert jobs["percentiles"]["age_s"] == {"p50": round(p50, 3), "p95": round(p95, 3), "p99": round(p99, 3),
                                            "max": round(created[6], 3)}
    # 6 just published (0-5 min), the corrupt one from 2023 (160 min+)
    assert [b["count"] for b in jobs["age_histogram"]] == [6, 0, 0, 0, 0, 0, 1]
    assert jobs["oldest_ready_age_s"] == round(now - 1700000000.123456, 3)  # the corrupt one is oldest
    empty = stats["empty"]
    assert empty["counts"]["total"] == 0 and empty["percentiles"]["age_s"]["p50"] is None

    by_file = {r[IX["file"]]: r for r in rows}
    bad = by_file[CORRUPT_DDMQ]
    assert bad[IX["state"]] == READY and "corrupt" in bad[IX["error"]] and bad[IX["payload_sha256"]] is None
    assert by_file["notes.txt"][IX["state"]] == FOREIGN
    assert by_file[".qconsole-publish-1"][IX["state"]] == WRITING
    inflight = [r for r in rows if r[IX["state"]] == INFLIGHT]
    assert [r[IX["id"]] for r in inflight] == [info["consumed"].id]
    assert inflight[0][IX["file"]].startswith("work/") and inflight[0][IX["expires_at"]] is not None
    binary = [r for r in rows if r[IX["error"]] == "binary payload"]
    assert len(binary) == 1 and binary[0][IX["payload_kind"]] == "binary"


def test_vsqs_rows_match_the_scan_and_bad_files_are_rows(tmp_path):
    info = build_vsqs_root(str(tmp_path / "vs"))
    handle, names, rows, now = _rows(str(tmp_path / "vs"))
    stats = _stats(handle, names, rows, now)
    scan = {q.name: q for q in handle.scan(now=now).queues}
    for name in names:
        assert {s: stats[name]["counts"][s] for s in STATES} == scan[name].counts
    jobs = stats["jobs"]
    assert jobs["counts"] == {READY: 3, INFLIGHT: 1, "expired": 0, "delayed": 0, WRITING: 1, FOREIGN: 1, "total": 5}
    assert jobs["duplicates"]["messages"] == 2 and jobs["duplicates"]["payloads"] == 1  # b"hello" twice
    assert jobs["poison"] is None  # vsqs has no redelivery counter: not shown as 0
    assert jobs["errors"] == 2  # binary payload + foreign README
    # payload sizes 5, 5, 8, 2, and the .new file's 4
    assert jobs["percentiles"]["size_bytes"] == {"p50": 5.0, "p95": 7.4, "p99": 7.88, "max": 8.0}
    held = [r for r in rows if r[IX["state"]] == INFLIGHT]
    assert [r[IX["id"]] for r in held] == [info["received"]]


def test_a_file_gone_between_listing_and_reading_is_a_row_with_an_error(tmp_path):
    build_vsqs_root(str(tmp_path / "vs"))
    handle = Root(str(tmp_path / "vs"))
    chunks = list(inventory.list_chunks("vsqs", handle.path, "jobs", time.time()))
    ready = [c for c in chunks if "msgs" in c["items"]][0]
    ids, states, relpaths = ready["items"]["msgs"][:3]
    victim = next(i for i, s in enumerate(states) if s == READY)
    os.unlink(os.path.join(handle.path, "jobs", relpaths[victim]))
    rows = [r for c in chunks for r in inventory.rows_of(inventory.read_chunk(c))]
    gone = [r for r in rows if r[IX["id"]] == ids[victim]]
    assert len(gone) == 1 and "gone" in gone[0][IX["error"]]


def test_chunk_descriptors_are_plain_data_and_big_queues_are_dealt_over_partitions(tmp_path):
    import pickle

    qdir = tmp_path / "vs" / "big"
    qdir.mkdir(parents=True)
    for i in range(25):
        (qdir / str(1700000000000000 + i)).write_bytes(b"m")
    (qdir / "notes").write_text("foreign")
    now = time.time()
    chunks = list(inventory.list_chunks("vsqs", str(tmp_path / "vs"), "big", now, size=10))
    assert [c["files"] for c in chunks] == [10, 10, 5, 1]  # 3 message chunks, then the foreign file
    assert [c["seq"] for c in chunks] == [0, 1, 2, 3]
    for c in chunks:  # a descriptor survives pickling unchanged and reads the same
        assert set(c) == {"store", "location", "queue", "now", "seq", "files", "items"}
        assert pickle.loads(pickle.dumps(c)) == c
    cols = [inventory.read_chunk(c) for c in chunks]
    assert sum(len(c[0]) for c in cols) == 26
    keyed = list(inventory.keyed_chunks([("vsqs", str(tmp_path / "vs"), "big", now)], partitions=4))
    # 25 < CHUNK: one message chunk and the leftovers chunk, dealt to consecutive partitions
    keys = [k for k, _c in keyed]
    assert len(keys) == 2 and keys[1] == (keys[0] + 1) % 4 and all(0 <= k < 4 for k in keys)


def test_unknown_store_is_refused():
    with pytest.raises(ValueError, match="no report reader"):
        list(inventory.list_chunks("redis", "redis://x", "q", 0.0))


def test_age_histogram_uses_qshape_buckets(tmp_path):
    """One vsqs message per bucket (and two more in the first), at known ages."""
    qdir = tmp_path / "vs" / "aged"
    qdir.mkdir(parents=True)
    now = time.time()
    minutes = [1, 2, 4.9, 7, 15, 30, 60, 120, 200]
    for m in minutes:
        (qdir / str(int((now - m * 60) * 1_000_000))).write_bytes(b"x")
    handle, names, rows, _now = _rows(str(tmp_path / "vs"))
    aged = _stats(handle, names, rows, now)["aged"]
    assert [b["bucket"] for b in aged["age_histogram"]] == ["0-5m", "5-10m", "10-20m", "20-40m", "40-80m", "80-160m", "160m+"]
    assert [b["count"] for b in aged["age_histogram"]] == [3, 1, 1, 1, 1, 1, 1]
    assert aged["age_histogram"][0] == {"bucket": "0-5m", "min_s": 0, "max_s": 300, "count": 3}
    assert aged["age_histogram"][-1]["max_s"] is None
    assert summary.age_bucket(299.999) == 0 and summary.age_bucket(300) == 1 and summary.age_bucket(9600) == 6


def test_history_lines_become_samples_and_junk_is_counted(tmp_path):
    path = str(tmp_path / "h.jsonl")
    history_lines(path)
    samples, info = history.read_history([path])
    assert info["lines"] == 5 and info["skipped_lines"] == 1 and info["samples"] == 4
    assert [s[3] for s in samples] == [4, 8, 3, 0]
    assert samples[-1][6] is None
    from qconsole.errors import QConsoleError

    with pytest.raises(QConsoleError, match="history file"):
        history.read_history([str(tmp_path / "missing")])


def test_importing_the_cli_does_not_import_pyspark():
    code = "import sys, qconsole.cli; sys.exit(1 if any(m.startswith('pyspark') for m in sys.modules) else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def _sorted_msgs(cols) -> list[tuple]:
    return sorted(zip(cols.id, cols.state, cols.relpath, cols.priority, cols.created_at, cols.deadline))


@pytest.mark.parametrize("build", [build_ddmq_root, build_vsqs_root])
def test_the_scanners_columns_are_its_messages(tmp_path, build):
    """collect="columns" (the report's listing: no Message per file, no sort) lists exactly the
    messages collect=True lists, with the same counts and errors."""
    build(str(tmp_path / "r"))
    handle = Root(str(tmp_path / "r"))
    now = time.time()
    for name in handle.queue_names()[0]:
        full = handle.module.scan_queue(handle.path, name, now, collect=True)
        cols = handle.module.scan_queue(handle.path, name, now, collect="columns")
        assert len(cols.messages) == len(full.messages)
        assert _sorted_msgs(cols.messages) == sorted(
            (m.id, m.state, m.relpath, m.priority, m.created_at, m.deadline) for m in full.messages)
        assert (cols.counts, cols.errors, cols.warnings) == (full.counts, full.errors, full.warnings)


@pytest.mark.parametrize("build", [build_ddmq_root, build_vsqs_root])
def test_partials_over_many_tasks_and_hash_buckets_equal_the_single_pass(tmp_path, build):
    """What the Spark job does, without Spark: chunks of 2 dealt over 3 read tasks, each
    summarising what it read (write_partition with summarise), the payload hashes counted in
    2 buckets (count_duplicates), the partials merged -- equals the one-process summary."""
    build(str(tmp_path / "r"))
    handle = Root(str(tmp_path / "r"))
    names, _errors = handle.queue_names()
    now = time.time()
    redelivery = inventory.redelivery_field(handle.layout)
    queues = [(n, handle.layout, redelivery) for n in names]
    chunks = [c for q in names for c in inventory.list_chunks(handle.layout, handle.path, q, now, size=2)]
    spec = inventory.Summarise(now, 2, redelivery, 2)
    out = tmp_path / "out"
    out.mkdir()
    records = []
    for task in range(3):
        mine = [(task, c) for i, c in enumerate(chunks) if i % 3 == task]
        records += list(inventory.write_partition(task, mine, str(out), summarise=spec))
    metas = [r for _b, r in records if r[0] == "m"]
    assert sorted(os.listdir(out)) == [f"part-0000{i}.parquet" for i in range(3)]
    assert sum(m[2] for m in metas) == sum(c["files"] for c in chunks)
    dup_parts = []
    for bucket in range(2):
        res = list(inventory.count_duplicates((b, r) for b, r in records if b == bucket))
        assert res[-1][0] == "d"
        dup_parts.append(res[-1][1])
    partials: dict = {}
    for m in metas:
        for q, part in m[3].items():
            partials.setdefault(q, summary.QueuePartial()).merge(part)
    got = summary.stats_from_partials(partials, summary.merge_duplicates(dup_parts), queues, 2)
    cols = inventory.scan_root_columns(handle.layout, handle.path, names, now)
    assert got == summary.queue_stats_columns(cols, queues, now, 2)
    jobs = next(s for s in got if s["name"] == "jobs")
    assert jobs["duplicates"]["messages"] == 2 and jobs["counts"]["total"] > 0


def test_percentiles_from_value_counts_equal_the_sorted_list():
    from collections import Counter

    import random

    rnd = random.Random(5)
    for n in (1, 2, 3, 7, 100, 1001):
        values = [rnd.randrange(50) for _ in range(n)]
        want = [summary.percentile(values, p) for p in summary.PERCENTILES]
        assert summary._pct_counts(Counter(values)) == want
    assert summary._pct_counts(Counter()) == [None] * len(summary.PERCENTILES)


def test_the_spool_lists_in_a_helper_and_refuses_what_it_did_not_write(tmp_path):
    """Local mode lists in a helper process into a spool of JSON chunks (no pickle); a read
    task checks every chunk: the expected queue, no path out of the queue directory."""
    from qconsole.errors import QConsoleError
    from qconsole.report import spool

    build_ddmq_root(str(tmp_path / "r"))
    handle = Root(str(tmp_path / "r"))
    names, _errors = handle.queue_names()
    now = time.time()
    listing = spool.SpoolListing(handle.layout, handle.path, names, now, str(tmp_path / "out"))
    try:
        index = listing.index()
        assert index["files"] == {"empty": 0, "jobs": 9}
        dealt = spool.deal(index, 4)
        assert sorted(c[2] for g in dealt for c in g) == sorted(c[2] for c in index["chunks"])
        loaded = [c for _k, c in spool.spooled_chunks(iter(dealt), listing.dir, handle.layout, handle.path)]
        want = [c for q in names for c in inventory.list_chunks(handle.layout, handle.path, q, now)]
        norm = lambda c: json_roundtrip(c)  # noqa: E731
        assert sorted(map(norm, loaded), key=repr) == sorted(map(norm, want), key=repr)
        rows = sorted(r for c in loaded for r in inventory.rows_of(inventory.read_chunk(c)))
        assert rows == sorted(inventory.scan_root_rows(handle.path, handle.layout, names, now))
        name = index["chunks"][0][2]
        with pytest.raises(QConsoleError, match="not a chunk of queue"):
            spool.load_chunk(listing.dir, name, handle.layout, handle.path, "other")
        import json

        path = os.path.join(listing.dir, name)
        doc = json.load(open(path))
        doc["items"]["msgs"][2][0] = "../../etc/passwd"
        os.unlink(path)
        with open(path, "w") as fh:
            json.dump(doc, fh)
        with pytest.raises(QConsoleError, match="outside the queue directory"):
            spool.load_chunk(listing.dir, name, handle.layout, handle.path, doc["queue"])
        os.unlink(path)
        os.symlink("/etc/hostname", path)
        with pytest.raises(QConsoleError, match="symlink"):
            spool.load_chunk(listing.dir, name, handle.layout, handle.path, doc["queue"])
        with pytest.raises(QConsoleError, match="not a listing chunk name"):
            spool.load_chunk(listing.dir, "../x.json", handle.layout, handle.path, doc["queue"])
    finally:
        listing.cleanup()
    assert not os.path.exists(listing.dir)


def json_roundtrip(obj):
    import json

    return json.loads(json.dumps(obj))


def test_a_failed_listing_helper_is_one_line(tmp_path):
    from qconsole.errors import QConsoleError
    from qconsole.report import spool

    listing = spool.SpoolListing("nosuch", str(tmp_path), ["q"], time.time(), str(tmp_path / "out"))
    try:
        with pytest.raises(QConsoleError, match="^listing failed: .*no report reader"):
            listing.index()
    finally:
        listing.cleanup()


def test_history_lines_spark_cannot_hold_are_skipped_or_unknown_never_fail_the_report(tmp_path):
    """One forged or corrupt line of a --history file failed the whole report: a ready count past
    a long ('Spark failed: [VALUE_OUT_OF_BOUNDS]', exit 2) or a time before year 1 in UTC
    ('internal error: OverflowError: date value out of range', exit 70). A time Spark cannot
    hold skips the line (counted); a count or an age no stats document holds is unknown."""
    import json
    import math

    def doc(at: str = "2024-05-01T10:00:00Z", **q) -> str:
        queue = {"name": "jobs", "layout": "ddmq", "ready": 4, "inflight": 1, "expired": 0,
                 "oldest_ready_age_s": 10.0, **q}
        return json.dumps({"schema": "qconsole.stats/2", "generated_at": at, "queues": [queue]})

    path = tmp_path / "h.jsonl"
    path.write_text("\n".join([
        doc(),
        doc("0001-01-01T00:00:00+14:00"),  # 0000-12-31 in UTC
        doc("9999-12-31T23:59:59-14:00"),  # year 10000 in UTC
        doc(ready=10**30, inflight=-3, expired=2**63),
        doc(oldest_ready_age_s=float("nan")),
        doc(oldest_ready_age_s=float("inf")),
        doc(oldest_ready_age_s=-5.0),
        doc(oldest_ready_age_s=10**400),
        doc("2024-05-01T12:00:00+02:00", ready=2**63 - 1),
    ]) + "\n")
    samples, info = history.read_history([str(path)])
    assert info["lines"] == 9 and info["skipped_lines"] == 2 and info["samples"] == 7
    assert samples[1][3:6] == (None, None, None)
    assert [s[6] for s in samples[2:6]] == [None] * 4
    assert samples[6][3] == 2**63 - 1 and samples[6][0].utcoffset().total_seconds() == 0
    for at, _q, _l, *numbers in samples:
        assert at.year >= 1 and at.utcoffset().total_seconds() == 0
        assert all(n is None or (0 <= n <= 2**63 - 1) for n in numbers[:3])
        assert numbers[3] is None or math.isfinite(numbers[3])
    types = pytest.importorskip("pyspark.sql.types")
    from qconsole.report.spark_job import schema_of

    schema = schema_of(history.SAMPLE_COLUMNS)
    for sample in samples:  # what createDataFrame does to each row first (no JVM needed)
        schema.toInternal(sample)
    assert isinstance(schema, types.StructType)
