"""stats / check / ls / peek through typer's CliRunner, on roots the real clients built,
plus one subprocess run of the installed console script (``--watch``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from qconsole.cli import app, register_all

register_all()
runner = CliRunner()
CHECK_LINE = re.compile(r"^QCONSOLE (OK|WARNING|CRITICAL|UNKNOWN) - [^|\n]+ \| [^\n]*\n$")


def _plain(text: str) -> str:
    """Terminal output without its SGR (bold) sequences."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def run(*args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=env)


@pytest.fixture
def ddmq_busy(ddmq_root):
    """jobs: 6 ready (priorities 9/10/999 mixed), 1 in flight, 1 expired."""
    root, b = ddmq_root
    for i, p in enumerate((9, 10, 999, 9, 10, 999, 10)):
        b.publish("jobs", json.dumps({"n": i, "p": p}), priority=p)
    b.consume("jobs", clean=False)  # a "10": in flight for 600 s
    b.publish("jobs", "will expire", priority=1, timeout=-50, clean=False)
    b.consume("jobs", clean=False)
    return root, b


@pytest.fixture
def vsqs_busy(vsqs_root):
    """jobs: 3 ready, 1 in flight, 1 expired (consumed by the real client)."""
    root, m = vsqs_root
    q = m.get_queue("jobs")
    ids = [q.publish(b'{"n": %d}' % i) for i in range(5)]
    q.receive(visibility_timeout=600)
    q.receive(visibility_timeout=-1)
    return root, q, ids


# ---- stats -----------------------------------------------------------------------------

def test_stats_json_is_the_documented_contract(ddmq_busy):
    root, _b = ddmq_busy
    res = run("stats", root, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema"] == "qconsole.stats/2"
    assert doc["root"] == os.path.abspath(root) and doc["layout"] == "ddmq"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", doc["generated_at"])
    (q,) = doc["queues"]
    assert {k: q[k] for k in ("name", "ready", "inflight", "expired", "delayed", "writing", "foreign", "total")} == {
        "name": "jobs", "ready": 6, "inflight": 1, "expired": 1, "delayed": 0, "writing": 0, "foreign": 0, "total": 8}
    assert 0 <= q["oldest_ready_age_s"] < 60
    assert 590 < q["next_expiry_s"] <= 600
    assert q["by_priority"]["10"] == {"ready": 2, "inflight": 1, "expired": 0}
    assert q["by_priority"]["1"] == {"ready": 0, "inflight": 0, "expired": 1}
    assert any("mixed-width" in w for w in q["warnings"]) and q["errors"] == []
    assert doc["totals"] == {"queues": 1, "ready": 6, "inflight": 1, "expired": 1, "delayed": 0, "writing": 0,
                             "foreign": 0, "total": 8}
    assert run("stats", root, "--format", "json").exit_code == 0
    # --schema 1: the previous document for existing scripts (no `delayed`)
    old = json.loads(run("stats", root, "--json", "--schema", "1").stdout)
    assert old["schema"] == "qconsole.stats/1" and "delayed" not in old["totals"]
    assert "delayed" not in old["queues"][0] and old["queues"][0]["total"] == 8


def test_stats_json_vsqs_has_no_by_priority_and_total_excludes_foreign(vsqs_busy):
    root, _q, _ids = vsqs_busy
    with open(os.path.join(root, "jobs", "README"), "w") as fh:
        fh.write("not a message")
    doc = json.loads(run("stats", "-r", root, "--json").stdout)
    (q,) = doc["queues"]
    assert "by_priority" not in q
    assert (q["ready"], q["inflight"], q["expired"], q["foreign"], q["total"]) == (3, 1, 1, 1, 5)


def test_stats_table_fits_80_columns(ddmq_busy):
    root, b = ddmq_busy
    b.create_queue("a-rather-long-queue-name-for-a-table")
    res = run("stats", root, env={"COLUMNS": "80"})
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    header = next(line for line in lines if "queue" in line and "ready" in line)
    assert header.split() == ["queue", "ready", "inflight", "expired", "writing", "foreign", "total",
                              "oldest", "next-exp"]
    assert all(len(line) <= 80 for line in lines if "warning" not in line)
    row = next(line for line in lines if line.split()[:1] == ["jobs"])
    assert row.split()[1:7] == ["6", "1", "1", "0", "0", "8"]


def test_stats_prometheus(ddmq_busy):
    root, _b = ddmq_busy
    res = run("stats", root, "--format", "prometheus")
    assert res.exit_code == 0
    out = res.stdout
    assert "# TYPE qconsole_messages gauge" in out and "# HELP qconsole_messages" in out
    assert re.search(r'^qconsole_messages\{root="[^"]+",queue="jobs",layout="ddmq",state="ready"\} 6$', out, re.M)
    assert re.search(r'^qconsole_messages\{.*state="expired"\} 1$', out, re.M)
    assert re.search(r'^qconsole_next_expiry_seconds\{.*queue="jobs"\} \d+\.\d{3}$', out, re.M)
    for line in out.splitlines():
        assert line.startswith("#") or re.fullmatch(r"[a-z_]+\{[^}]*\} -?\d+(\.\d+)?", line), line


def test_stats_queue_filter(ddmq_busy):
    root, b = ddmq_busy
    b.create_queue("other")
    doc = json.loads(run("stats", root, "--json").stdout)
    assert [q["name"] for q in doc["queues"]] == ["jobs", "other"]
    doc = json.loads(run("stats", root, "--json", "--queue", "other").stdout)
    assert [q["name"] for q in doc["queues"]] == ["other"]
    res = run("stats", root, "--queue", "nope")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "no queue 'nope'" in res.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_queue_named_twice_is_counted_once(ddmq_busy, jobs):
    """`stats -q jobs -q jobs` (a generated list of queues) counted jobs twice: totals 16 of 8,
    two rows; Prometheus repeated every series (the whole scrape fails on a duplicate) and
    `check` said '2 queues, 12 ready' with each perfdata label twice. Through the console
    script (the typer-free path an operator's cron runs) and typer's."""
    root, b = ddmq_busy
    b.create_queue("other")
    exe = os.path.join(os.path.dirname(sys.executable), "qconsole")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE")}
    twice = ["-q", "jobs", "-q", "other", "-q", "jobs", "--jobs", jobs]

    def script(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([exe, *args], capture_output=True, text=True, timeout=60, env=env)

    for out in (script("stats", root, "--json", *twice).stdout, run("stats", root, "--json", *twice).stdout):
        doc = json.loads(out)
        assert [q["name"] for q in doc["queues"]] == ["jobs", "other"]
        assert doc["totals"]["queues"] == 2 and doc["totals"]["total"] == 8
    prom = script("stats", root, "--format", "prometheus", *twice).stdout
    series = [line.rsplit(" ", 1)[0] for line in prom.splitlines() if not line.startswith("#")]
    assert len(series) == len(set(series)) and series
    res = script("check", root, "--warn-ready", "100", *twice)
    assert res.returncode == 0 and "2 queues, 6 ready" in res.stdout, res.stdout
    perf = res.stdout.split("|", 1)[1].split()
    assert len(perf) == len({p.split("=")[0] for p in perf})


def test_root_from_positional_option_and_environment(ddmq_busy, tmp_path):
    root, _b = ddmq_busy
    for args, env in ((["stats", root], None), (["stats", "--root", root], None), (["stats", "-r", root], None),
                      (["stats"], {"QCONSOLE_ROOT": root})):
        res = run(*args, "--json", env=env)
        assert res.exit_code == 0, (args, res.output)
        assert json.loads(res.stdout)["totals"]["total"] == 8
    res = run("ls", "jobs", "--json", env={"QCONSOLE_ROOT": root})
    assert json.loads(res.stdout)["count"] == 8
    # positional wins over the environment
    res = run("stats", root, "--json", env={"QCONSOLE_ROOT": str(tmp_path / "nowhere")})
    assert res.exit_code == 0


def test_watch_loop_with_the_installed_console_script(ddmq_busy):
    """One subprocess test of the installed ``qconsole``: two JSON documents, one per line."""
    root, _b = ddmq_busy
    exe = os.path.join(os.path.dirname(sys.executable), "qconsole")
    assert os.access(exe, os.X_OK)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE")}
    proc = subprocess.Popen([exe, "stats", root, "--json", "--watch", "0.2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        docs = [json.loads(proc.stdout.readline()) for _ in range(2)]
    finally:
        proc.kill()
        proc.wait(5)
    assert [d["schema"] for d in docs] == ["qconsole.stats/2"] * 2
    assert docs[0]["generated_at"] < docs[1]["generated_at"]
    assert all(d["totals"]["total"] == 8 for d in docs)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_watch_table_redraws_in_place_on_a_terminal_and_ctrl_c_exits_0(tmp_path):
    """On a terminal ``stats --watch`` keeps one table up to date (like watch(1))."""
    import pty
    import signal

    (tmp_path / "q").mkdir()
    (tmp_path / "q" / "1700000000000000").touch()
    exe = os.path.join(os.path.dirname(sys.executable), "qconsole")
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE")}
    env.update(COLUMNS="100", LINES="30", TERM="xterm-256color")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([exe, "stats", str(tmp_path), "--watch", "0.2"], stdin=follower, stdout=follower,
                            stderr=follower, env=env, close_fds=True)
    os.close(follower)
    out = b""

    def read_for(seconds: float, until: bytes | None = None) -> None:
        nonlocal out
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (until and until in out):
            import select

            if select.select([leader], [], [], 0.05)[0]:
                try:
                    out += os.read(leader, 65536)
                except OSError:
                    return

    try:
        read_for(30, until=b"queue  ready")  # a loaded machine can take a while to start it
        (tmp_path / "q" / "1700000000000001").touch()
        read_for(1.5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(5) == 0
        read_for(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))
    assert "Traceback" not in text
    assert b"\x1b[" in out and re.search(rb"\x1b\[\d*A", out)  # the cursor goes back up: redrawn in place
    assert text.count("queue  ready") >= 2  # the header is drawn again each time ...
    rows = re.findall(r" q +(\d+) ", text)
    assert rows[0] == "1" and rows[-1] == "2"  # ... with the new count


# ---- check -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "args, code, word",
    [
        ([], 0, "OK"),
        (["--warn-ready", "5"], 1, "WARNING"),
        (["--warn-ready", "5", "--crit-ready", "6"], 2, "CRITICAL"),
        (["--warn-expired", "1"], 1, "WARNING"),
        (["--crit-expired", "1"], 2, "CRITICAL"),
        (["--warn-age", "3600"], 0, "OK"),
        (["--warn-age", "0"], 1, "WARNING"),
        (["--warn-ready", "100", "--crit-expired", "5"], 0, "OK"),
    ],
)
def test_check_exit_codes_and_line(ddmq_busy, args, code, word):
    root, _b = ddmq_busy
    res = run("check", root, *args)
    assert res.exit_code == code, res.output
    assert CHECK_LINE.match(res.stdout), res.stdout
    assert res.stdout.startswith(f"QCONSOLE {word} - ")
    assert "jobs_ready=6;" in res.stdout and "jobs_expired=1;" in res.stdout


def test_check_perfdata_carries_thresholds(ddmq_busy):
    root, _b = ddmq_busy
    out = run("check", root, "--warn-ready", "5", "--crit-ready", "9").stdout
    assert "jobs_ready=6;5;9;0;" in out and "jobs ready=6 (WARNING)" in out


@pytest.mark.parametrize("plant", ["symlinked-queue", "ddmq-yaml-to-dev-zero"])
def test_check_warns_of_a_queue_the_root_holds_but_nobody_counts(ddmq_busy, tmp_path, plant):
    """A root-level error is a queue left out of every figure: check said OK without a word
    (a planted ddmq.yaml -> /dev/zero hid a queue of messages). Both ways the console script goes."""
    root, _b = ddmq_busy
    if plant == "symlinked-queue":
        os.symlink(os.path.join(root, "jobs"), os.path.join(root, "alias"))
        why = "root: alias: symlink not followed"
    else:
        shutil.copytree(os.path.join(root, "jobs"), os.path.join(root, "other"), symlinks=True)
        os.unlink(os.path.join(root, "other", "ddmq.yaml"))
        os.symlink("/dev/zero", os.path.join(root, "other", "ddmq.yaml"))
        why = "root: other: ddmq.yaml is no regular file"
    exe = os.path.join(os.path.dirname(sys.executable), "qconsole")
    fast = subprocess.run([exe, "check", root], capture_output=True, text=True, timeout=60)
    for res in (run("check", root), fast):
        code = getattr(res, "exit_code", None)
        code = res.returncode if code is None else code
        assert code == 1, res.stdout
        assert CHECK_LINE.match(res.stdout), res.stdout
        assert res.stdout.startswith(f"QCONSOLE WARNING - {why}"), res.stdout
        assert "jobs_ready=6;" in res.stdout  # the queues it does count, as before
    # thresholds still rank above it
    res = run("check", root, "--crit-expired", "1")
    assert res.exit_code == 2 and res.stdout.startswith(f"QCONSOLE CRITICAL - {why}")


def test_check_unknown_for_missing_or_unreadable_root(tmp_path, monkeypatch):
    res = run("check", str(tmp_path / "missing"))
    assert res.exit_code == 3 and res.stdout.startswith("QCONSOLE UNKNOWN - root ") and "does not exist" in res.stdout
    res = run("check")
    assert res.exit_code == 3 and "no root given" in res.stdout
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    res = run("check", str(tmp_path))
    assert res.exit_code == 3 and "permission denied" in res.stdout


# ---- ls --------------------------------------------------------------------------------

def test_ls_order_is_the_real_consumers_order(ddmq_busy):
    root, b = ddmq_busy
    doc = json.loads(run("ls", "jobs", "-r", root, "--json").stdout)
    assert doc["schema"] == "qconsole.ls/1" and doc["count"] == doc["shown"] == 8
    states = [m["state"] for m in doc["messages"]]
    assert states == ["ready"] * 6 + ["inflight", "expired"]
    ready = [m["id"] for m in doc["messages"] if m["state"] == "ready"]
    assert [m["position"] for m in doc["messages"]][:6] == [1, 2, 3, 4, 5, 6]
    assert [m["priority"] for m in doc["messages"]][:6] == [10, 10, 9, 9, 999, 999]
    assert all(m["size_bytes"] > 0 for m in doc["messages"])
    assert doc["messages"][6]["expires_in_s"] > 590 and doc["messages"][7]["expires_in_s"] < 0
    delivered = []
    while (msg := b.consume("jobs", clean=False)) is not None:
        delivered.append(msg.id)
    assert delivered == ready


def test_ls_state_limit_and_table(vsqs_busy):
    root, _q, ids = vsqs_busy
    doc = json.loads(run("ls", "jobs", "-r", root, "--json", "--state", "ready", "--limit", "2").stdout)
    assert doc["count"] == 3 and doc["shown"] == 2
    assert [m["id"] for m in doc["messages"]] == ids[2:4]
    doc = json.loads(run("ls", "jobs", "-r", root, "--json", "--state", "expired").stdout)
    assert [m["id"] for m in doc["messages"]] == [ids[1]] and doc["messages"][0]["position"] is None
    res = run("ls", "jobs", "-r", root, env={"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"})  # the terminal table
    assert res.exit_code == 0
    lines = _plain(res.stdout).splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert any("─" in line for line in lines)  # Rich's head rule
    for mid in ids:  # one row per message, full VSQS id
        assert sum(mid in line for line in lines) == 1
    res = run("ls", "jobs", "-r", root, "--limit", "1", env={"TTY_COMPATIBLE": "1", "NO_COLOR": "1"})
    assert "1 of 5 shown" in res.stdout
    # piped: a header and one plain line per message in delivery order, the note on stderr
    res = run("ls", "jobs", "-r", root, "--limit", "1")
    assert res.stdout.splitlines()[0].split() == ["#", "id", "state", "prio", "created", "deadline", "size"]
    assert res.stdout.splitlines()[1].split()[:3] == ["1", ids[2], "ready"]
    assert len(res.stdout.splitlines()) == 2 and "1 of 5 shown" in res.stderr
    rows = [line.split() for line in run("ls", "jobs", "-r", root).stdout.splitlines()[1:]]
    assert [r[0] for r in rows[:3]] == ["1", "2", "3"] and sorted(next(t for t in r if t in ids) for r in rows) == sorted(ids)
    res = run("ls", "jobs", "-r", root, "--state", "bogus")
    assert res.exit_code == 2 and "unknown state" in res.stderr


def test_ls_table_shortens_ddmq_ids_and_peek_takes_the_prefix(ddmq_busy):
    root, _b = ddmq_busy
    out = _plain(run("ls", "jobs", "-r", root, env={"COLUMNS": "80", "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}).stdout)
    first = next(line for line in out.splitlines() if line.split()[:1] == ["1"]).split()[1]
    assert first.endswith("…") and len(first) == 13
    piped = run("ls", "jobs", "-r", root).stdout  # a script gets the whole id
    full = next(line for line in piped.splitlines() if line.split()[:1] == ["1"]).split()[1]
    assert len(full) == 32 and full.startswith(first[:-1])
    nxt = json.loads(run("peek", "jobs", "-r", root, "--json").stdout)
    assert nxt["id"].startswith(first[:-1])
    doc = json.loads(run("peek", "jobs", first, "-r", root, "--json").stdout)
    assert doc["id"] == nxt["id"]


# ---- peek ------------------------------------------------------------------------------

def test_peek_default_is_what_the_real_consumer_takes_next(ddmq_busy):
    root, b = ddmq_busy
    doc = json.loads(run("peek", "jobs", "-r", root, "--json").stdout)
    assert doc["schema"] == "qconsole.peek/1" and doc["state"] == "ready"
    assert doc["kind"] == "json" and doc["payload"]["p"] == 10
    assert doc["fields"]["priority"] == 10 and doc["fields"]["requeue_counter"] == 0
    text = run("peek", "jobs", "-r", root).stdout
    assert "requeue_counter" in text and '"p": 10' in text
    # the fields as the file holds them (JSON), and what ddmq makes of the empty ones
    rows = {line.split()[0]: line.split(None, 1)[1].strip() for line in text.splitlines() if line.split()[:1]
            and line.split()[0] in ("requeue_limit", "requeue", "timeout")}
    assert doc["fields"]["requeue_limit"] is None and doc["fields"]["timeout"] is None
    assert rows == {"requeue_limit": "null (no limit)", "requeue": json.dumps(doc["fields"]["requeue"]),
                    "timeout": "null (the queue's message_timeout)"}
    assert b.consume("jobs", clean=False).id == doc["id"]  # peek changed nothing


def test_peek_vsqs_next_inflight_expired_and_raw(vsqs_busy):
    root, q, ids = vsqs_busy
    doc = json.loads(run("peek", "jobs", "-r", root, "--json").stdout)
    assert doc["id"] == ids[2] and doc["payload"] == {"n": 2}
    for mid, state in ((ids[0], "inflight"), (ids[1], "expired")):
        d = json.loads(run("peek", "jobs", mid, "-r", root, "--json").stdout)
        assert d["state"] == state and d["payload"] == {"n": int(ids.index(mid))}
        assert d["deadline"] is not None
    res = runner.invoke(app, ["peek", "jobs", ids[3], "-r", root, "--raw"])
    assert res.stdout_bytes == b'{"n": 3}'
    res = run("peek", "jobs", "1234", "-r", root)
    assert res.exit_code == 2 and "no message '1234'" in res.stderr
    held_file = next(n for n in os.listdir(os.path.join(root, "jobs")) if n.startswith(ids[0] + "."))
    d = json.loads(run("peek", "jobs", held_file, "-r", root, "--json").stdout)  # by file name
    assert d["id"] == ids[0] and d["state"] == "inflight"
    unique = next(ids[4][:k] for k in range(1, 17) if sum(m.startswith(ids[4][:k]) for m in ids) == 1)
    d = json.loads(run("peek", "jobs", unique, "-r", root, "--json").stdout)  # a unique prefix
    assert d["id"] == ids[4]
    res = run("peek", "jobs", ids[0][:4], "-r", root)
    assert res.exit_code == 2 and "matches 5 messages" in res.stderr
    before = sorted(os.listdir(os.path.join(root, "jobs")))
    run("peek", "jobs", "-r", root)
    assert sorted(os.listdir(os.path.join(root, "jobs"))) == before
    # the real consumer takes the peeked one (and requeues the expired one on its way)
    assert q.receive(visibility_timeout=600)[0] == doc["id"]


def test_peek_caps_huge_payloads_with_a_note(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "1700000000000000").write_bytes(b"a" * 200_000)
    res = run("peek", "jobs", "-r", str(tmp_path))
    assert res.exit_code == 0
    assert "showing 64.0 KiB of 195.3 KiB (--raw for all)" in res.stdout
    assert res.stdout.count("a") < 70_000
    doc = json.loads(run("peek", "jobs", "-r", str(tmp_path), "--json").stdout)
    assert doc["truncated"] is True and doc["size_bytes"] == 200_000 and len(doc["payload"]) == 65536
    raw = runner.invoke(app, ["peek", "jobs", "-r", str(tmp_path), "--raw"])
    assert len(raw.stdout_bytes) == 200_000


def test_peek_raw_refuses_a_payload_of_gigabytes_without_reading_it(tmp_path):
    (tmp_path / "jobs").mkdir()
    with open(tmp_path / "jobs" / "1700000000000000", "wb") as fh:
        fh.truncate(6 << 30)  # sparse: 6 GiB that cost no disk, and would cost 6 GiB of memory
    res = runner.invoke(app, ["peek", "jobs", "-r", str(tmp_path), "--raw"])
    assert res.exit_code == 2 and not res.stdout_bytes
    assert "6,442,450,944 bytes; --raw writes at most 1024 MiB" in res.stderr


def test_peek_empty_queue_is_one_clear_line(ddmq_root):
    root, _b = ddmq_root
    res = run("peek", "jobs", "-r", root)
    assert res.exit_code == 2 and res.stderr == "qconsole: queue 'jobs' has no ready message\n"


def test_version_and_help():
    assert run("--help").exit_code == 0
    res = run("stats", "--help")
    assert res.exit_code == 0 and "--watch" in res.stdout


def test_json_output_is_stable_under_time(ddmq_busy):
    root, _b = ddmq_busy
    t0 = time.time()
    doc = json.loads(run("stats", root, "--json").stdout)
    assert doc["scan_duration_s"] < 5 and time.time() - t0 < 10


@pytest.mark.parametrize("every", ["1e10", "1e308"])
def test_watch_beyond_a_day_is_one_line_not_an_overflow(tmp_path, every):
    """`stats --watch 1e10` slept past the platform's time_t: internal OverflowError, exit 70."""
    (tmp_path / "jobs").mkdir()
    res = run("stats", str(tmp_path), "--watch", every)
    assert res.exit_code == 2 and "--watch" in res.output and "86400" in res.output, res.output
    assert "internal error" not in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [["check", "--warn-age", "inf"], ["check", "--crit-age", "1e999"],
                                  ["check", "--warn-age", "9" * 400], ["check", "--crit-age", "1e308"],
                                  ["check", "--warn-age", "3153600001"], ["stats", "-r", "OTHER"], ["check", "-r", "OTHER"], ["stats", "--json", "--root=OTHER"]])
def test_an_infinite_age_threshold_or_two_roots_is_one_line(tmp_path, argv):
    """`check --warn-age inf` wrote `inf` into the perfdata; `stats v -r d` ran on v and
    silently ignored d."""
    (tmp_path / "jobs").mkdir()
    other = tmp_path / "other"
    other.mkdir()
    argv = [a.replace("OTHER", str(other)) for a in argv]
    for how in ("typer", "console script"):
        if how == "typer":
            res = run(argv[0], str(tmp_path), *argv[1:])
            code, out = res.exit_code, res.output
        else:
            import subprocess
            import sys

            done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "qconsole"), argv[0], str(tmp_path),
                                   *argv[1:]], capture_output=True, text=True, timeout=60)
            code, out = done.returncode, done.stdout + done.stderr
        assert code == 2 and len(out.strip().splitlines()) == 1, (how, out)
        # (400 digits made inf on the typer-free path; 1e308 went into the perfdata as 309 digits)
        assert ("100 years" in out) if "age" in argv[1] else ("two roots" in out), (how, out)


def test_peek_raw_of_a_ddmq_file_too_large_to_parse_says_so(ddmq_root):
    """It said '--raw writes at most 1024 MiB' of a 17 MiB file: the payload is inside JSON the
    parse cap (16 MiB) keeps qconsole from reading."""
    root, b = ddmq_root
    b.publish("jobs", "B" * (17 << 20), clean=False)
    res = run("peek", "jobs", "--raw", "-r", root)
    assert res.exit_code == 2 and "too large to parse" in res.output and "copy the file itself" in res.output, res.output
    assert "at most 1024 MiB" not in res.output


def test_one_root_spelt_two_ways_is_one_root_and_the_console_refuses_two(tmp_path, monkeypatch):
    (tmp_path / "v" / "jobs").mkdir(parents=True)
    (tmp_path / "d").mkdir()
    monkeypatch.chdir(tmp_path)
    for other in ("v/", str(tmp_path / "v")):
        res = run("stats", "v", "-r", other, "--json")
        assert res.exit_code == 0 and json.loads(res.stdout)["queues"][0]["name"] == "jobs", (other, res.output)
    res = run("open", "v", "-r", "d")  # the console (`qconsole v -r d`): `-r d` was silently ignored
    assert res.exit_code == 2 and "give every root as ROOT" in res.output, res.output


def test_ls_says_what_it_left_out_in_every_form(tmp_path):
    """A FIFO named like a message is no message (ls leaves it out, as --json's errors say): the
    table, the plain lines and --ids say so on a line of their own, not only --json."""
    queue = tmp_path / "jobs"
    queue.mkdir()
    (queue / "1795713694746677").write_bytes(b"x")
    os.mkfifo(queue / "1795713694746678")
    said = "1795713694746678: named like a message but not a regular file"
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}
    for extra, env in (([], base), (["--ids"], base), ([], {**base, "TTY_COMPATIBLE": "1", "NO_COLOR": "1"})):
        res = subprocess.run([sys.executable, "-m", "qconsole", "ls", "jobs", "-r", str(tmp_path), *extra],
                             capture_output=True, text=True, env=env, timeout=60)
        assert res.returncode == 0, res.stderr
        # the terminal's table is followed by its notes (as stats' table); a pipe keeps them off stdout
        notes = res.stdout if env is not base else res.stderr
        assert [line for line in notes.splitlines() if said in line] in (["error: " + said], ["error " + said])
        assert "1795713694746677" in res.stdout and "1795713694746678" not in res.stdout.replace(said, "")
    res = run("ls", "jobs", "-r", str(tmp_path))  # typer's path prints the same
    assert res.exit_code == 0 and "error: " + said in res.output.splitlines()


def test_a_watch_outlives_a_failed_scan_and_says_so_once(tmp_path):
    """stats --watch feeding a monitor keeps going when the root is gone for a while (an NFS
    hiccup, a restore): one line when it fails, one when it scans again, documents before and
    after; a first scan that fails still ends it (a mistyped root)."""
    import signal

    from running_lines import RunningLines

    root = tmp_path / "root"
    (root / "jobs").mkdir(parents=True)
    (root / "jobs" / "1795713694746677").write_bytes(b"x")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    watch = RunningLines([sys.executable, "-m", "qconsole", "stats", "--watch", "0.2", "--json", str(root)], env)
    try:
        watch.wait_for(lambda: len(watch.out) >= 2)
        root.rename(tmp_path / "away")
        watch.wait_for(lambda: len(watch.err) >= 1)
        before = len(watch.out)
        time.sleep(1.0)  # five more failed scans: still one line
        assert len(watch.err) == 1 and "still watching: trying again every 0.2 s" in watch.err[0], watch.err
        assert watch.err[0].startswith("qconsole: cannot read root") and len(watch.out) == before
        (tmp_path / "away").rename(root)
        watch.wait_for(lambda: len(watch.out) >= before + 2)
        assert watch.err[1:] == ["qconsole: scanning again\n"]
        assert json.loads(watch.out[-1])["totals"]["ready"] == 1
    finally:
        assert watch.stop(signal.SIGINT) == 0
    res = subprocess.run([sys.executable, "-m", "qconsole", "stats", "--watch", "0.2", "--json", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1


def test_ls_help_names_every_state_its_state_option_takes(tmp_path):
    """`ls --help` named four states where `--state` takes six (writing and foreign too)."""
    from qconsole.states import STATES

    res = run("ls", "--help", env={"COLUMNS": "200"})
    assert res.exit_code == 0
    assert all(s in _plain(res.output) for s in STATES)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "1795713694746677.new").write_bytes(b"x")
    res = run("ls", "jobs", "-r", str(tmp_path), "--state", "writing")
    assert res.exit_code == 0 and "1795713694746677" in res.output


def test_an_empty_listing_says_so(tmp_path):
    """ls of an empty queue (or a filter that keeps nothing) printed a header alone, which reads
    like output cut short: a note says there is nothing, on stderr when piped (stdout stays
    the header scripts parse), after the table on a terminal."""
    (tmp_path / "jobs").mkdir()
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}

    def ls(*args: str, env: dict = base) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "qconsole", "ls", "jobs", "-r", str(tmp_path), *args],
                              capture_output=True, text=True, env=env, timeout=60)

    res = ls()
    assert res.returncode == 0 and res.stdout.split() == ["#", "id", "state", "prio", "created", "deadline", "size"]
    assert res.stderr == "no messages\n"
    (tmp_path / "jobs" / "1795713694746677").write_bytes(b"payload")
    assert ls().stderr == "" and ls("--ids").stderr == ""
    assert ls("--state", "expired").stderr == "no expired messages\n"
    assert ls("--grep", "nothing-like-it").stderr == "no messages match\n"
    res = ls("--state", "expired", env={**base, "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": "80"})
    assert res.stdout.splitlines()[-1] == "no expired messages" and res.stderr == ""
    assert json.loads(ls("--state", "expired", "--json").stdout)["count"] == 0


def test_stats_of_a_root_without_queues_says_so(tmp_path):
    """stats of a root with no queue (a fresh VSQS root, an empty RSMQ namespace) printed the
    header alone, which reads like output cut short: 'no queues' says so, on stderr when piped
    (stdout stays the table scripts read), after the table on a terminal; JSON is unchanged."""
    base = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}

    def stats(*args: str, env: dict = base) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "qconsole", "stats", str(tmp_path), "--layout", "vsqs", *args],
                              capture_output=True, text=True, env=env, timeout=60)

    res = stats()
    assert res.returncode == 0 and res.stderr == "no queues\n" and "queue" in res.stdout.split()
    res = stats(env={**base, "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": "80"})
    assert res.stdout.splitlines()[-1] == "no queues" and res.stderr == ""
    res = stats("--json")
    assert res.stderr == "" and json.loads(res.stdout)["queues"] == []
    (tmp_path / "jobs").mkdir()
    assert stats().stderr == ""
