"""Outputs from a scan: humanized values, the Nagios line, JSON and Prometheus, and the
typer-free `stats` fast path giving exactly what the typer command gives."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from qconsole.cli import app, register_all
from qconsole.fastpath import fast_stats
from qconsole.model import QueueScan, RootScan
from qconsole.output import humanize, prometheus
from qconsole.output.nagios import Thresholds, evaluate, queue_part
from qconsole.output.stats_json import SCHEMA, iso_utc, stats_document

register_all()
NOW = 1_700_000_000.0


def _scan() -> RootScan:
    q = QueueScan("jobs", "vsqs", NOW)
    q.counts.update(ready=5, inflight=2, expired=1, writing=1, foreign=3)
    q.oldest_ready_created = NOW - 90
    q.next_deadline = NOW + 30
    e = QueueScan('we"ird\nq', "vsqs", NOW)
    return RootScan("/r", "vsqs", NOW, 0.01, [q, e])


def test_humanize():
    assert [humanize.duration(x) for x in (None, 5, 65, 7260, 90000, -5)] == ["-", "5s", "1m05s", "2h01m", "1d01h", "-5s"]
    # far out (a planted deadline): years, short enough for a column ("1136623d16h" was cut)
    day = 86400
    assert [humanize.duration(x) for x in (999 * day, 1000 * day, 1136623 * day, -1136623 * day, 9.99e14)] == \
        ["999d00h", "2y270d", "3114y", "-3114y", ">99999y"]
    assert [humanize.size(x) for x in (None, 5, 2048, 5 * 2**20)] == ["-", "5 B", "2.0 KiB", "5.0 MiB"]
    assert humanize.clock(0, utc=True) == "1970-01-01 00:00:00"
    assert iso_utc(0.5) == "1970-01-01T00:00:00.500Z"


def test_stats_document_totals_exclude_foreign():
    doc = stats_document(_scan())
    assert doc["schema"] == SCHEMA == "qconsole.stats/2"
    q = doc["queues"][0]
    assert q["total"] == 9 and q["foreign"] == 3
    assert q["oldest_ready_age_s"] == 90.0 and q["next_expiry_s"] == 30.0
    assert doc["queues"][1]["oldest_ready_age_s"] is None and doc["queues"][1]["next_expiry_s"] is None
    assert doc["totals"] == {"queues": 2, "ready": 5, "inflight": 2, "expired": 1, "delayed": 0, "writing": 1,
                             "foreign": 3, "total": 9}
    assert all(q["delayed"] == 0 for q in doc["queues"])


def test_schema_1_is_the_previous_document():
    """--schema 1: no `delayed` field anywhere, total as /1 computed it, no RSMQ figures."""
    scan = _scan()
    scan.queues[0].counts["delayed"] = 4  # as an RSMQ queue would have
    doc = stats_document(scan, 1)
    assert doc["schema"] == "qconsole.stats/1"
    assert all("delayed" not in q and "rsmq" not in q for q in doc["queues"])
    assert doc["queues"][0]["total"] == 9
    assert doc["totals"] == {"queues": 2, "ready": 5, "inflight": 2, "expired": 1, "writing": 1, "foreign": 3, "total": 9}
    assert stats_document(scan, 2)["totals"]["total"] == 13


def test_prometheus_escapes_labels():
    out = prometheus.render(_scan())
    assert 'queue="we\\"ird\\nq"' in out
    assert 'qconsole_messages{root="/r",queue="jobs",layout="vsqs",state="foreign"} 3' in out
    assert 'qconsole_oldest_ready_age_seconds{root="/r",queue="jobs"} 90.000' in out
    assert out.count("qconsole_next_expiry_seconds{") == 1  # absent for the idle queue


@pytest.mark.parametrize(
    "t, code",
    [(Thresholds(), 0), (Thresholds(warn_ready=5), 1), (Thresholds(crit_ready=5), 2),
     (Thresholds(warn_age=60, crit_age=120), 1), (Thresholds(crit_age=90), 2), (Thresholds(warn_expired=2), 0)],
)
def test_nagios(t, code):
    got, line = evaluate(_scan(), t)
    assert got == code
    assert re.match(r"QCONSOLE (OK|WARNING|CRITICAL) - .+ \| jobs_ready=5;", line)
    assert "\n" not in line and re.search(r" we_ird_q~[0-9a-f]{16}_ready=0;", line)


def test_nagios_perfdata_labels_never_shared_by_two_queues():
    """``a b`` and ``a_b`` were both labelled ``a_b``: graphing tools keep one series per label,
    so one queue's figures overwrote the other's (review). A name kept as it is stays as it is
    (existing graphs go on); a name made safe carries a hash of the real name."""
    names = ["a_b", "a b", "a\tb", "a/b", "a\u00e9b", "a|b", "q+|[%{", "q[@* +", "plain-1.x:y"]  # (a crc32 pair)
    scan = RootScan("/r", "vsqs", NOW, 0.01, [QueueScan(n, "vsqs", NOW) for n in names])
    line = evaluate(scan, Thresholds())[1]
    labels = [p.split("=")[0][: -len("_ready")] for p in line.split(" | ")[1].split() if p.split("=")[0].endswith("_ready")]
    assert len(labels) == len(names) and len(set(labels)) == len(names), labels
    assert labels[0] == "a_b" and labels[-1] == "plain-1.x:y"
    assert all(re.fullmatch(r"[A-Za-z0-9_.:-]+(~[0-9a-f]{16})?", lb) for lb in labels), labels
    # stable from run to run (the hash is of the name, not of the order)
    again = RootScan("/r", "vsqs", NOW, 0.01, [QueueScan(n, "vsqs", NOW) for n in reversed(names)])
    assert sorted(labels) == sorted(p.split("=")[0][:-6] for p in evaluate(again, Thresholds())[1].split(" | ")[1].split()
                                    if p.split("=")[0].endswith("_ready"))


def test_nagios_scan_errors_warn():
    s = _scan()
    s.queues[0].errors.append("x: named like a message but not a regular file")
    assert evaluate(s, Thresholds())[0] == 1


@pytest.mark.parametrize("t", [Thresholds(), Thresholds(warn_ready=3, crit_ready=6, warn_age=60, warn_expired=1)])
def test_nagios_parts_made_by_forked_scanners_give_the_same_line(tmp_path, t):
    """check formats each queue where it was scanned (Backend.scan's ``each``): the line is the
    one formatted afterwards from the scan alone, whichever process scanned which queue."""
    import os

    from qconsole.backends import open_target

    now_us = int(NOW * 1_000_000)
    for i, name in enumerate(["a|b", "jobs", "mail box", "q.3", *(f"q{k:02d}" for k in range(12))]):
        q = tmp_path / name
        q.mkdir()
        for k in range(i % 9):
            (q / str(now_us - 10**9 * (k + 1))).write_text("x")
        if i % 3 == 0:
            (q / f"{now_us - 7 * 10**9}.{now_us - 10**6}").write_text("x")  # expired
        if i % 4 == 1:
            (q / "not-a-message").write_text("x")
    backend = open_target(str(tmp_path))
    scan = backend.scan(now=NOW, jobs=2, each=queue_part(t))
    assert [p[0] for p in scan.per_queue] == [q.name for q in scan.queues] and len(scan.queues) == 16
    forked = evaluate(scan, t, scan.per_queue)
    assert forked == evaluate(scan, t)
    assert forked[0] == (0 if t == Thresholds() else 2)
    assert ("a/b expired=1 (WARNING)" in forked[1]) == (t != Thresholds())  # '|' never reaches the text
    assert re.search(r" a_b~[0-9a-f]{16}_ready=0;", forked[1]) and re.search(r" mail_box~[0-9a-f]{16}_age=", forked[1])
    # parts that are not the scan's queues in its order are not trusted: made again
    assert evaluate(scan, t, scan.per_queue[::-1]) == forked
    assert evaluate(scan, t, [("x", 2, ["x bad"], "x_ready=1")] * 16) == forked


@pytest.mark.parametrize(
    "args",
    [["--json"], ["--format", "prometheus"], ["-f", "json", "-q", "jobs"], ["--format=json", "--queue=jobs"],
     ["--json", "--format", "table"], ["--json", "--layout", "VSQS"], ["--json", "-q", "nope"],
     ["--json", "-q", "a/b"], ["--json", "--check-types"], ["--json", "--jobs", "1"], ["--json", "-j", "2"],
     [], ["--format", "table"], ["-q", "jobs", "--check-types"], ["-q", "nope"],
     ["--json", "--schema", "1"], ["--json", "--schema=2"], ["--schema", "1", "--format", "prometheus"]],
)
def test_fast_path_matches_typer(tmp_path, capsys, args):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "1700000000000000").write_text("x")
    (tmp_path / "jobs" / "1700000000000001.1700000000000002").write_text("x")
    code = fast_stats([str(tmp_path), *args])
    fast = capsys.readouterr()
    res = CliRunner().invoke(app, ["stats", str(tmp_path), *args])
    assert code == res.exit_code
    assert fast.err == res.stderr

    def norm(text: str) -> str:
        return re.sub(r'("generated_at": "[^"]+"|"(scan_duration_s|oldest_ready_age_s|next_expiry_s)": [0-9.e-]+|'
                      r'qconsole_(scan|oldest|next)_\w+\{[^}]*\} [0-9.e-]+)', "", text)

    assert norm(fast.out) == norm(res.stdout)
    wants_json = "--json" in args or "json" in args or "--format=json" in args
    if code == 0 and wants_json:
        doc = json.loads(fast.out)
        v1 = "--schema" in args and args[args.index("--schema") + 1] == "1"
        assert doc["schema"] == ("qconsole.stats/1" if v1 else "qconsole.stats/2")
    elif code == 0 and "prometheus" not in args:  # the table
        assert "jobs" in fast.out and "ready" in fast.out


@pytest.mark.parametrize("args", [["--watch", "1"], ["--help"], ["--bogus"], ["--queue"], ["--format", "html"],
                                  ["--json", "--jobs=0"], ["--json", "--jobs", "x"], ["--json", "--schema", "3"]])
def test_fast_path_declines_what_it_does_not_handle(tmp_path, args):
    assert fast_stats([str(tmp_path), *args]) is None


@pytest.mark.parametrize("ts", [0, 1.5, 1_795_435_747.999, 1e11, -5.5, 2**31, 253_402_300_799, 1_699_999_999.9999995,
                                1_699_999_999.9999994, -0.0000004, -0.0000006])
@pytest.mark.parametrize("utc", [True, False])
def test_clock_reads_as_datetime_does(ts, utc):
    from datetime import datetime, timezone

    from qconsole.output import humanize

    want = datetime.fromtimestamp(ts, tz=timezone.utc if utc else None).strftime("%Y-%m-%d %H:%M:%S")
    assert humanize.clock(ts, utc=utc) == want


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 1e300])
def test_duration_of_a_planted_absurd_value_is_a_dash(value):
    from qconsole.output import humanize

    assert humanize.duration(value) == "-"
