"""ddmq.yaml saves: removing keys (core + CLI, read back by the real ddmq client), and the
lost-update race with ddmq's own rewrite of the file in clean()."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from peers import ddmq_broker
from qconsole.cli import app
from qconsole.ops import Operations, ReadOnlyError
from qconsole.ops import audit
from qconsole.backends.ddmq import settings_write
from qconsole.backends import open_target as Root
from qconsole.backends.ddmq.settings import SettingsError

runner = CliRunner()


def run(*args: str, env: dict | None = None) -> Any:
    return runner.invoke(app, list(args), env=env)


def _ops(root: str, **kw: Any) -> Operations:
    ops = Operations(Root(root), audit_log=os.path.join(root, ".qconsole", "audit.log"), **kw)
    ops.settings_settle_s = 0  # no race in these tests unless one is staged through the _settle seam
    return ops


def qfile(root: str, queue: str | None = "jobs") -> str:
    return os.path.join(root, queue, "ddmq.yaml") if queue else os.path.join(root, "ddmq.yaml")


def load(path: str) -> Any:
    with open(path) as fh:
        return yaml.safe_load(fh)


def last_audit(root: str) -> dict[str, Any]:
    return audit.read(os.path.join(root, ".qconsole", "audit.log"))[-1]


def ddmq_stale_clean(broker: Any, queue: str, stale: dict[str, Any], cleaned: int) -> None:
    """ddmq's own clean() tail -- ``update_settings_file(queue, {'cleaned': ...})`` -- whose read of
    the file happened before our save: the real write code, fed the content it had read."""
    broker.get_config_file = lambda queue="": dict(stale)  # the read ddmq did earlier
    try:
        broker.update_settings_file(queue, {"cleaned": cleaned})
    finally:
        del broker.get_config_file


# ---------------------------------------------------------------------------- removing keys


def test_unset_falls_back_to_root_then_default_for_the_real_client(ddmq_root):
    root, broker = ddmq_root
    with open(qfile(root), "a") as fh:
        fh.write("custom_key: keep me\n")
    ops = _ops(root)
    ops.save_settings(None, {"priority": 500})
    assert ddmq_broker(root).get_settings("jobs")["priority"] == 999  # the queue file (ddmq wrote every default) wins
    res = ops.save_settings("jobs", {}, unset=["priority"])
    assert res.done == ["priority"]
    on_disk = load(qfile(root))
    assert "priority" not in on_disk
    assert on_disk == {"cleaned": 0, "message_timeout": 600, "requeue": True, "requeue_prio": 0,
                       "custom_key": "keep me"}
    fresh = ddmq_broker(root)
    assert fresh.get_settings("jobs")["priority"] == 500  # the root's value again
    assert fresh.get_settings("jobs")["custom_key"] == "keep me"
    fresh.publish("jobs", "takes the root default")
    assert ddmq_broker(root).consume("jobs").priority == 500
    ops.save_settings(None, {}, unset=["priority"])
    assert load(qfile(root, None)) == {}
    assert ddmq_broker(root).get_settings("jobs")["priority"] == 999  # ddmq's default


def test_unset_every_key_leaves_a_mapping_ddmq_can_read(ddmq_root):
    root, _broker = ddmq_root
    ops = _ops(root)
    ops.save_settings(None, {"message_timeout": 42})
    ops.save_settings("jobs", {}, unset=list(load(qfile(root))))
    with open(qfile(root)) as fh:
        assert fh.read() == "{}\n"  # not an empty file: ddmq's get_settings crashes on one
    fresh = ddmq_broker(root)
    assert fresh.get_settings("jobs") == dict(fresh.default_settings, message_timeout=42)


def test_set_and_unset_together_and_in_the_audit_log(ddmq_root):
    root, _broker = ddmq_root
    res = _ops(root).save_settings("jobs", {"priority": 7}, unset=["requeue", "requeue_prio", "requeue"])
    assert res.done == ["priority", "requeue", "requeue_prio"]
    assert load(qfile(root)) == {"cleaned": 0, "message_timeout": 600, "priority": 7}
    rec = last_audit(root)
    assert (rec["action"], rec["queue"], rec["outcome"]) == ("config", "jobs", "ok")
    assert rec["values"] == {"priority": 7}
    assert rec["unset"] == ["requeue", "requeue_prio"]
    assert rec["verify"] == {"attempts": 1}


def test_unset_a_key_that_is_not_there_is_fine_and_writes_nothing(ddmq_root):
    root, _broker = ddmq_root
    before = os.stat(qfile(root))
    content = open(qfile(root), "rb").read()
    res = _ops(root).save_settings("jobs", {}, unset=["no_such_key"])
    assert res.done == ["no_such_key"] and not res.skipped
    after = os.stat(qfile(root))
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert open(qfile(root), "rb").read() == content
    assert last_audit(root)["unset"] == ["no_such_key"]


@pytest.mark.parametrize("values, unset, needle", [
    ({"priority": 3}, ["priority"], "priority: both set and unset in one save"),
    ({}, None, "nothing to set"),
    ({}, [], "nothing to set"),
    ({}, [""], "bad setting name"),
    ({"priority": -1}, ["requeue"], "non-negative integer"),
])
def test_bad_requests_change_nothing(ddmq_root, values, unset, needle):
    root, _broker = ddmq_root
    content = open(qfile(root), "rb").read()
    with pytest.raises(SettingsError) as err:
        _ops(root).save_settings("jobs", values, unset=unset)
    assert needle in str(err.value) and "\n" not in str(err.value)
    assert open(qfile(root), "rb").read() == content


def test_read_only_refuses_unset(ddmq_root):
    root, _broker = ddmq_root
    content = open(qfile(root), "rb").read()
    with pytest.raises(ReadOnlyError):
        _ops(root, read_only=True).save_settings("jobs", {}, unset=["priority"])
    assert open(qfile(root), "rb").read() == content
    assert not os.path.exists(os.path.join(root, ".qconsole", "audit.log"))


# ---------------------------------------------------------------------------- CLI


def test_cli_unset_queue_and_root(ddmq_root):
    root, _broker = ddmq_root
    assert run("config", "priority=500", "-r", root).exit_code == 0
    res = run("config", "jobs", "--unset", "priority", "--unset", "requeue_prio", "requeue=false", "-r", root)
    assert res.exit_code == 0, res.output
    assert "config jobs: 3 done" in res.output
    assert load(qfile(root)) == {"cleaned": 0, "message_timeout": 600, "requeue": False}
    doc = json.loads(run("config", "jobs", "--json", "-r", root).output)
    assert doc["priority"] == {"value": 500, "source": "root"}
    assert doc["requeue_prio"] == {"value": 0, "source": "default"}
    assert doc["requeue"] == {"value": False, "source": "queue"}
    res = run("config", "-", "--unset", "priority", "-r", root)  # '-': the root's file
    assert res.exit_code == 0, res.output
    assert load(qfile(root, None)) == {}
    assert json.loads(run("config", "jobs", "--json", "-r", root).output)["priority"] == {"value": 999, "source": "default"}
    rec = last_audit(root)
    assert rec["queue"] is None and rec["unset"] == ["priority"] and rec["values"] == {}


@pytest.mark.parametrize("args, needle", [
    (["config", "jobs", "priority=3", "--unset", "priority"], "both set and unset"),
    (["config", "jobs", "priority", "--unset", "requeue"], "cannot show 'priority' while changing"),
    (["config", "jobs", "--unset", "priority=3"], "bad --unset"),
    (["config", "nosuch", "--unset", "priority"], "no queue"),
])
def test_cli_unset_bad_input_one_line_exit_2(ddmq_root, args, needle):
    root, _broker = ddmq_root
    content = open(qfile(root), "rb").read()
    res = run(*args, "-r", root)
    assert res.exit_code == 2
    assert needle in res.output and res.output.count("\n") == 1
    assert "Traceback" not in res.output
    assert open(qfile(root), "rb").read() == content


def test_cli_unset_refused_read_only(ddmq_root):
    root, _broker = ddmq_root
    content = open(qfile(root), "rb").read()
    for res in (run("config", "jobs", "--unset", "priority", "-r", root, "--read-only"),
                run("config", "--unset", "priority", "-r", root, env={"QCONSOLE_READ_ONLY": "1"})):
        assert res.exit_code == 2 and "read-only" in res.output
    assert open(qfile(root), "rb").read() == content
    assert not os.path.exists(os.path.join(root, ".qconsole", "audit.log"))


# ---------------------------------------------------------------------------- the race with ddmq's clean()


def test_ddmq_clean_rewrites_the_whole_queue_file(ddmq_root):
    """What the retry is for: every clean() by a long-lived client rewrites ddmq.yaml from a read."""
    root, broker = ddmq_root
    inodes = set()
    for _ in range(3):
        broker.publish("jobs", "x")  # publish() runs clean() first; its cached `cleaned` stays 0
        inodes.add(os.stat(qfile(root)).st_ino)
    assert len(inodes) == 3  # replaced (rename) every time, not only once a minute
    on_disk = load(qfile(root))
    assert on_disk["cleaned"] > 0 and broker.get_settings("jobs")["cleaned"] == 0
    assert not os.path.exists(qfile(root) + ".intermediate")


def test_a_save_reverted_once_by_ddmq_is_saved_again_and_keeps_ddmqs_cleaned(ddmq_root, monkeypatch):
    root, broker = ddmq_root
    stale = broker.get_config_file("jobs")  # ddmq read the file before our save...
    cleaned = int(time.time())
    delays = []

    def settle(delay: float) -> None:  # ...and renames its copy over ours after it
        delays.append(delay)
        if len(delays) == 1:
            ddmq_stale_clean(broker, "jobs", stale, cleaned)

    monkeypatch.setattr(settings_write, "_settle", settle)
    ops = Operations(Root(root), audit_log=os.path.join(root, ".qconsole", "audit.log"))
    res = ops.save_settings("jobs", {"priority": 5}, unset=["requeue_prio"])
    assert res.done == ["priority", "requeue_prio"]
    assert delays == [settings_write.SETTLE_S] * 2  # the default pause, then the retry's read-back
    on_disk = load(qfile(root))
    assert on_disk["priority"] == 5 and "requeue_prio" not in on_disk
    assert on_disk["cleaned"] == cleaned  # re-based on ddmq's write: its timestamp is not lost either
    assert ddmq_broker(root).get_settings("jobs")["priority"] == 5
    assert any("reverted the save" in w for w in ops.warnings)
    rec = last_audit(root)
    assert rec["outcome"] == "ok" and rec["verify"] == {"attempts": 2}


def test_an_unset_reverted_by_ddmq_is_removed_again(ddmq_root, monkeypatch):
    root, broker = ddmq_root
    stale = broker.get_config_file("jobs")
    calls = []

    def settle(delay: float) -> None:
        calls.append(delay)
        if len(calls) == 1:
            ddmq_stale_clean(broker, "jobs", stale, 123)

    monkeypatch.setattr(settings_write, "_settle", settle)
    _ops(root).save_settings("jobs", {}, unset=["priority"])
    assert len(calls) == 2
    assert "priority" not in load(qfile(root)) and load(qfile(root))["cleaned"] == 123


def test_a_save_that_never_sticks_is_one_clear_error(ddmq_root, monkeypatch):
    root, broker = ddmq_root
    stale = broker.get_config_file("jobs")
    calls = []

    def settle(delay: float) -> None:
        calls.append(delay)
        ddmq_stale_clean(broker, "jobs", stale, 1000 + len(calls))

    monkeypatch.setattr(settings_write, "_settle", settle)
    with pytest.raises(settings_write.LostUpdateError) as err:
        _ops(root).save_settings("jobs", {"priority": 5, "message_timeout": 30})
    msg = str(err.value)
    assert "\n" not in msg
    assert "priority, message_timeout" in msg and f"{settings_write.ATTEMPTS} saves" in msg
    assert "the file keeps the old values" in msg
    assert len(calls) == settings_write.ATTEMPTS
    assert load(qfile(root))["priority"] == 999
    rec = last_audit(root)
    assert rec["outcome"] == "error" and "reverted" in rec["error"]
    assert rec["verify"] == {"attempts": settings_write.ATTEMPTS}
    # the CLI: one line, exit 2
    res = run("config", "jobs", "priority=5", "-r", root)
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "reverted" in res.output


def test_another_writers_new_value_is_not_overwritten(ddmq_root, monkeypatch):
    root, _broker = ddmq_root
    calls = []

    def settle(delay: float) -> None:  # someone else deliberately sets a third value meanwhile
        calls.append(delay)
        with open(qfile(root), "w") as fh:
            fh.write("priority: 42\n")

    monkeypatch.setattr(settings_write, "_settle", settle)
    with pytest.raises(SettingsError) as err:
        _ops(root).save_settings("jobs", {"priority": 5})
    assert "priority was set to 42 by another writer" in str(err.value)
    assert len(calls) == 1  # no retry against a deliberate change
    assert load(qfile(root)) == {"priority": 42}


def test_saves_stick_while_a_real_ddmq_client_keeps_cleaning(ddmq_root):
    """Live: a real broker publishing in a loop rewrites ddmq.yaml on every publish (clean())."""
    root, _broker = ddmq_root
    stop = threading.Event()
    rewrites = []

    def producer() -> None:
        b = ddmq_broker(root)
        while not stop.is_set():
            b.publish("jobs", "x")
            rewrites.append(1)

    t = threading.Thread(target=producer, daemon=True)
    t.start()
    try:
        while len(rewrites) < 5:
            time.sleep(0.005)
        for i in range(10):
            saved = settings_write.save(root, "jobs", {"priority": 100 + i}, settle=0.1, attempts=30)
            assert saved.written["priority"] == 100 + i
            assert load(qfile(root))["priority"] == 100 + i
    finally:
        stop.set()
        t.join(10)
    assert load(qfile(root))["priority"] == 109
    assert len(rewrites) > 10


def test_the_longest_timeout_keeps_a_consumed_message_in_flight(ddmq_root):
    """A timeout longer than MAX_TIMEOUT gives ddmq's consumers deadlines past the 11 digits a
    work file name holds, which qconsole reads as foreign, not held (review: a consumed message
    vanished from stats, check and requeue). Such a timeout is refused in settings and at
    publish; the longest one accepted still keeps the real consumer's message in flight."""
    from qconsole.backends.ddmq.layout import MAX_TIMEOUT

    ddmq_root, broker = ddmq_root
    broker.publish("jobs", "to-consume", clean=False)
    before = load(qfile(ddmq_root))
    for args in (["config", "jobs", f"message_timeout={MAX_TIMEOUT + 1}"],
                 ["publish", "jobs", "x", "--timeout", str(MAX_TIMEOUT + 1)],
                 ["publish", "jobs", "x", "--timeout", "9" * 23]):
        res = run(*args, "-r", ddmq_root)
        assert res.exit_code == 2 and "at most 9999999999" in res.output.replace(",", ""), res.output
    assert load(qfile(ddmq_root)) == before
    assert run("config", "jobs", f"message_timeout={MAX_TIMEOUT}", "-r", ddmq_root).exit_code == 0
    root = Root(ddmq_root)
    ready = root.scan_queue("jobs").counts["ready"]
    assert ready >= 1
    ddmq_broker(ddmq_root).consume("jobs", clean=False)  # a real consumer: deadline = now + timeout
    scan = root.scan_queue("jobs")
    assert scan.counts["inflight"] == 1 and scan.counts["ready"] == ready - 1 and not scan.errors
