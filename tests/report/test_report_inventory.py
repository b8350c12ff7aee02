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
    return {s["name"]: s for s in summary.queue_stats(rows, [(n, handle.layout) for n in names], now, threshold)}


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
    assert jobs["counts"] == {READY: 6, INFLIGHT: 1, "expired": 0, WRITING: 1, FOREIGN: 1, "total": 8}
    # payload sizes 10, 3, 3, 40, 100, 5 (the corrupt file has none)
    assert jobs["percentiles"]["size_bytes"] == {"p50": 7.5, "p95": 85.0, "max": 100.0}
    ids = {m.message: m.id for m in info["published"] if m.message != "dup"}
    dup_ids = [m.id for m in info["published"] if m.message == "dup"]
    by_rc = {m.requeue_counter: m.id for m in info["published"] if m.message == "dup"}
    assert jobs["poison"] == [
        {"id": by_rc[4], "requeue_counter": 4},
        {"id": ids["y" * 40], "requeue_counter": 3},
    ]
    assert jobs["poison_count"] == 2
    assert jobs["duplicates"] == 2 and len(dup_ids) == 2
    assert jobs["errors"] == 3  # corrupt JSON, binary payload, foreign file
    # ages: 8 messages created at known times (one qconsole temp file has none)
    created = sorted(now - r[IX["created_at"]].timestamp() for r in rows
                     if r[IX["queue"]] == "jobs" and r[IX["created_at"]] is not None)
    assert len(created) == 7
    p50 = created[3]  # pos 0.5 * 6 = 3
    p95 = created[5] + 0.7 * (created[6] - created[5])  # pos 5.7
    assert jobs["percentiles"]["age_s"] == {"p50": round(p50, 3), "p95": round(p95, 3), "max": round(created[6], 3)}
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
    assert jobs["counts"] == {READY: 3, INFLIGHT: 1, "expired": 0, WRITING: 1, FOREIGN: 1, "total": 5}
    assert jobs["duplicates"] == 2  # b"hello" twice
    assert jobs["poison_count"] == 0  # vsqs has no requeue counter
    assert jobs["errors"] == 2  # binary payload + foreign README
    # payload sizes 5, 5, 8, 2, and the .new file's 4
    assert jobs["percentiles"]["size_bytes"] == {"p50": 5.0, "p95": 7.4, "max": 8.0}
    held = [r for r in rows if r[IX["state"]] == INFLIGHT]
    assert [r[IX["id"]] for r in held] == [info["received"]]


def test_a_file_gone_between_listing_and_reading_is_a_row_with_an_error(tmp_path):
    build_vsqs_root(str(tmp_path / "vs"))
    handle = Root(str(tmp_path / "vs"))
    chunks = list(inventory.queue_chunks(handle.path, "vsqs", "jobs", time.time()))
    ready = [c for c in chunks if c[0] == "read"][0]
    victim = next(f for f in ready[4] if f[1] == READY)
    os.unlink(os.path.join(handle.path, "jobs", victim[2]))
    rows = [r for c in chunks for r in inventory.chunk_rows(c)]
    gone = [r for r in rows if r[IX["id"]] == victim[0]]
    assert len(gone) == 1 and "gone" in gone[0][IX["error"]]


def test_big_queues_are_cut_into_chunks_dealt_over_partitions(tmp_path):
    qdir = tmp_path / "vs" / "big"
    qdir.mkdir(parents=True)
    for i in range(25):
        (qdir / str(1700000000000000 + i)).write_bytes(b"m")
    chunks = list(inventory.queue_chunks(str(tmp_path / "vs"), "vsqs", "big", time.time(), chunk=10))
    assert [len(c[4]) for c in chunks] == [10, 10, 5]
    keyed = list(inventory.keyed_chunks([(str(tmp_path / "vs"), "vsqs", "big", time.time())], partitions=4))
    assert len({k for k, _c in keyed}) == 1  # 25 < CHUNK: one chunk
    assert all(0 <= k < 4 for k, _c in keyed)


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
