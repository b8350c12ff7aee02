"""Bad input: one clear line on stderr and exit 2 (never a traceback); scans count what they can."""

from __future__ import annotations

import base64
import json
import os

import pytest
from typer.testing import CliRunner

from qconsole.cli import app, register_all
from qconsole.backends import open_target as Root
from qconsole.backends.fs import listing as fs_listing
from qconsole.backends.ddmq.settings import SettingsError, effective, load_config
from unprivileged import MISSING, run_qconsole

register_all()
runner = CliRunner()


def one_line_error(res, *needles: str) -> None:
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert res.stderr.startswith("qconsole: ") and res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.output
    for n in needles:
        assert n in res.stderr, res.stderr


@pytest.mark.parametrize("cmd", [["stats"], ["ls", "jobs"], ["peek", "jobs"]])
def test_root_problems(tmp_path, cmd):
    (tmp_path / "file").write_text("x")
    (tmp_path / "neither" / "stuff").mkdir(parents=True)
    (tmp_path / "neither" / "stuff" / "notes.txt").write_text("x")
    root_flag = ["-r"] if cmd[0] != "stats" else []
    one_line_error(runner.invoke(app, cmd + root_flag + [str(tmp_path / "missing")]), "does not exist")
    one_line_error(runner.invoke(app, cmd + root_flag + [str(tmp_path / "file")]), "is not a directory")
    one_line_error(runner.invoke(app, cmd + root_flag + [str(tmp_path / "neither")]), "neither layout")
    one_line_error(runner.invoke(app, cmd), "no root given")


def test_permission_denied_simulated(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    one_line_error(runner.invoke(app, ["stats", str(tmp_path)]), "permission denied")


@pytest.mark.skipif(MISSING is not None, reason=str(MISSING))
def test_permission_denied_for_real(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0)
    try:
        res = run_qconsole("stats", str(locked))
    finally:
        locked.chmod(0o755)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert "permission denied" in res.stderr.lower() and "Traceback" not in res.stderr


def test_unreadable_queue_dir_is_a_scan_error_not_a_crash(tmp_path, monkeypatch):
    (tmp_path / "good").mkdir()
    (tmp_path / "good" / "1700000000000000").write_text("x")
    (tmp_path / "bad").mkdir()
    def refusing(real):
        def listing(path="."):
            if str(path).endswith("/bad"):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)
        return listing

    monkeypatch.setattr(os, "scandir", refusing(os.scandir))  # typed listings
    monkeypatch.setattr(os, "listdir", refusing(os.listdir))  # names alone
    real_open = os.open

    def refusing_open(path, *args, **kwargs):  # a queue directory opened to be listed
        if str(path).endswith("/bad"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    # (Python's readers: the C one lists with its own calls; tests/cli/test_unreadable.py
    # takes a real permission away from the installed qconsole, C reader and all)
    monkeypatch.setattr(fs_listing, "plain_c", None)
    res = runner.invoke(app, ["stats", str(tmp_path), "--json"])
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    bad = next(q for q in doc["queues"] if q["name"] == "bad")
    assert bad["errors"] == ["cannot read bad: Permission denied"]
    assert doc["totals"]["ready"] == 1


@pytest.mark.parametrize("name", ["a/b", "..", ".", "a\0b", "../../etc"])
def test_bad_queue_names(vsqs_root, name):
    root, manager = vsqs_root
    manager.get_queue("jobs")
    for cmd in (["ls", name], ["peek", name], ["stats", root, "--queue", name]):
        args = cmd + (["-r", root] if cmd[0] != "stats" else [])
        one_line_error(runner.invoke(app, args), "queue name")


def test_unknown_queue(vsqs_root):
    root, manager = vsqs_root
    manager.get_queue("jobs")
    one_line_error(runner.invoke(app, ["ls", "nope", "-r", root]), "no queue 'nope'")


def test_corrupt_and_half_written_ddmq_json(ddmq_root):
    root, b = ddmq_root
    b.publish("jobs", "ok", priority=5)
    qdir = os.path.join(root, "jobs")
    with open(os.path.join(qdir, "1.17000000001.ddmq" + "a" * 32), "w") as fh:
        fh.write('{"message": "half-writ')  # ddmq writes non-atomically
    with open(os.path.join(qdir, "2.17000000001.ddmq" + "b" * 32), "w") as fh:
        fh.write("[1, 2")
    res = runner.invoke(app, ["stats", root, "--json"])
    assert json.loads(res.stdout)["queues"][0]["ready"] == 3  # counting never reads content
    res = runner.invoke(app, ["peek", "jobs", "-r", root])
    assert res.exit_code == 0 and "not a complete ddmq JSON message" in res.stdout and "half-writ" in res.stdout
    doc = json.loads(runner.invoke(app, ["peek", "jobs", "b" * 32, "-r", root, "--json"]).stdout)
    assert doc["error"].startswith("not a complete ddmq JSON") and doc["payload"] == "[1, 2"


def test_binary_payloads(tmp_path):
    (tmp_path / "jobs").mkdir()
    blob = bytes(range(256))
    (tmp_path / "jobs" / "1700000000000000").write_bytes(blob)
    res = runner.invoke(app, ["peek", "jobs", "-r", str(tmp_path)])
    assert res.exit_code == 0 and "kind" in res.stdout and "binary" in res.stdout
    assert "00000000  00 01 02 03" in res.stdout and "\x1b" not in res.stdout
    doc = json.loads(runner.invoke(app, ["peek", "jobs", "-r", str(tmp_path), "--json"]).stdout)
    assert doc["kind"] == "binary" and base64.b64decode(doc["payload_base64"]) == blob


def test_undecodable_file_and_queue_names(tmp_path):
    root = os.fsencode(str(tmp_path))
    os.mkdir(os.path.join(root, b"jobs"))
    os.mkdir(os.path.join(root, b"q\xff\xfe"))
    open(os.path.join(root, b"jobs", b"1700000000000000"), "wb").close()
    open(os.path.join(root, b"jobs", b"junk\xff.bin"), "wb").close()
    open(os.path.join(root, b"q\xff\xfe", b"1700000000000001"), "wb").close()
    res = runner.invoke(app, ["stats", str(tmp_path), "--json"])
    assert res.exit_code == 0
    doc = json.loads(res.stdout)
    counts = {q["name"]: (q["ready"], q["foreign"]) for q in doc["queues"]}
    assert counts["jobs"] == (1, 1) and counts["q\udcff\udcfe"] == (1, 0)
    res = runner.invoke(app, ["stats", str(tmp_path)], env={"COLUMNS": "120"})
    assert res.exit_code == 0 and "q\\xff\\xfe" in res.stdout
    res = runner.invoke(app, ["stats", str(tmp_path), "--format", "prometheus"])
    assert res.exit_code == 0


def test_huge_ddmq_file_peek_is_capped(ddmq_root):
    root, b = ddmq_root
    b.publish("jobs", "x" * 300_000)
    res = runner.invoke(app, ["peek", "jobs", "-r", root])
    assert res.exit_code == 0 and "showing 64.0 KiB of 293.0 KiB" in res.stdout


def test_bad_yaml_and_python_tags_never_run(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "ddmq.yaml").write_text(f'cleaned: !!python/object/apply:os.system ["touch {marker}"]\n')
    (tmp_path / "jobs" / "work").mkdir(parents=True)
    (tmp_path / "jobs" / "ddmq.yaml").write_text("message_timeout: [unclosed\n")
    res = runner.invoke(app, ["stats", str(tmp_path), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["layout"] == "ddmq"
    with pytest.raises(SettingsError) as err:
        effective(str(tmp_path), "jobs")
    assert "not valid YAML" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(SettingsError, match="line 2"):
        load_config(str(tmp_path / "jobs" / "ddmq.yaml"))
    assert not marker.exists()
    (tmp_path / "jobs" / "ddmq.yaml").write_text("- a list\n")
    with pytest.raises(SettingsError, match="expected a mapping"):
        load_config(str(tmp_path / "jobs" / "ddmq.yaml"))
    assert Root(str(tmp_path)).scan().queues[0].name == "jobs"


def test_fifo_named_like_a_message_is_never_opened(tmp_path):
    (tmp_path / "jobs").mkdir()
    os.mkfifo(tmp_path / "jobs" / "1700000000000000")
    # by names alone (the default) it is counted as what its name says -- and never opened,
    # or this would hang; --check-types reads the type from the listing and flags it
    res = runner.invoke(app, ["stats", str(tmp_path), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["queues"][0]["ready"] == 1
    res = runner.invoke(app, ["stats", str(tmp_path), "--json", "--check-types"])
    q = json.loads(res.stdout)["queues"][0]
    assert q["ready"] == 0 and q["foreign"] == 1 and "not a regular file" in q["errors"][0]
    one_line_error(runner.invoke(app, ["peek", "jobs", "-r", str(tmp_path)]), "no ready message")
