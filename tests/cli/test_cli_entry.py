"""The entry point: `qconsole [ROOT]` opens the TUI, global options may precede a command."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from qconsole.cli import register_all
from qconsole.cli.app import rewrite_argv

register_all()
QCONSOLE = os.path.join(os.path.dirname(sys.executable), "qconsole")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], ["open"]),
        (["/q"], ["open", "/q"]),
        (["--read-only", "/q"], ["open", "--read-only", "/q"]),
        (["--read-only", "purge", "jobs"], ["purge", "--read-only", "jobs"]),
        (["--layout", "ddmq", "stats"], ["stats", "--layout", "ddmq"]),
        (["-r", "/q", "ls", "jobs"], ["ls", "-r", "/q", "jobs"]),
        (["--root=/q", "peek", "jobs"], ["peek", "--root=/q", "jobs"]),
        (["stats", "/q", "--json"], ["stats", "/q", "--json"]),
        (["--help"], ["--help"]),
    ],
)
def test_rewrite_argv(argv, expected):
    assert rewrite_argv(argv) == expected


def test_read_only_before_the_command_refuses_and_changes_nothing(ddmq_root):
    root, broker = ddmq_root
    broker.publish("jobs", "keep me")
    before = sorted(os.listdir(os.path.join(root, "jobs")))
    proc = subprocess.run(
        [QCONSOLE, "--read-only", "purge", "jobs", "--yes", "--root", root],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "read-only" in proc.stderr.lower()
    assert len(proc.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir(os.path.join(root, "jobs"))) == before


def test_python_dash_m_runs_the_same_entry(ddmq_root):
    root, broker = ddmq_root
    broker.publish("jobs", "x")
    proc = subprocess.run([sys.executable, "-m", "qconsole", "stats", root, "--format", "prometheus"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert 'queue="jobs",layout="ddmq",state="ready"} 1' in proc.stdout


@pytest.mark.parametrize("argv, meant", [
    (["stat", "ROOT"], "stats"),
    (["purg", "jobs", "-r", "ROOT"], "purge"),
    (["chek", "ROOT"], "check"),
])
def test_a_mistyped_command_is_said_to_be_one(ddmq_root, argv, meant):
    """`qconsole stat ROOT` said 'root /cwd/stat does not exist'; `qconsole purg jobs -r ROOT`
    said 'roots given as ROOT and as --root': both were typos of a command."""
    root, _broker = ddmq_root
    argv = [root if a == "ROOT" else a for a in argv]
    proc = subprocess.run([QCONSOLE, *argv], capture_output=True, text=True, timeout=60, cwd=os.path.dirname(root))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"no command '{argv[0]}'" in proc.stderr and f"qconsole {meant}" in proc.stderr, proc.stderr


def test_a_root_named_like_a_command_still_opens_as_a_root(tmp_path):
    """Only a word that is no path is taken for a typo: a directory `stat` here is a root."""
    (tmp_path / "stat").mkdir()
    proc = subprocess.run([QCONSOLE, "stat"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "QCONSOLE_ROOT": ""})
    assert proc.returncode == 2 and "no command" not in proc.stderr and "neither" in proc.stderr, proc.stderr
