"""``check`` and ``ls`` answered without typer give exactly what the typer commands give:
output, errors and exit codes; and what the fast path does not handle goes to typer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from qconsole.cli import app, register_all
from qconsole.fastpath import fast_check, fast_ls, parse_args

register_all()


@pytest.fixture
def root(tmp_path):
    q = tmp_path / "jobs"
    q.mkdir()
    (q / "1700000000000000").write_text("x")
    (q / "1700000000000001.1700000000000002").write_text("yy")
    (q / "1700000000000003.9700000000000002").write_text("zzz")
    (q / "1700000000000004.new").write_text("")
    (tmp_path / "mail").mkdir()
    (tmp_path / "mail" / "1700000000000100").write_text("m")
    return tmp_path


def _norm(text: str) -> str:
    # ages and times move between the two runs
    text = re.sub(r"(_age=|age=)[0-9.]+s", r"\1Xs", text)
    text = re.sub(r'"(generated_at|expires_in_s)": [^,\n]+', r'"\1": X', text)
    return re.sub(r"(in |ago)[0-9dhms ]+", "X", text)


def _both(fast, command: str, argv: list[str], capsys, env: dict | None = None):
    code = fast(argv)
    got = capsys.readouterr()
    assert code is not None, f"the fast path declined {argv}"
    res = CliRunner().invoke(app, [command, *argv], env=env)
    return code, got, res


CHECK_ARGS = [
    [], ["--warn-ready", "1"], ["--crit-ready", "1", "--warn-ready", "0"], ["--warn-age", "0"],
    ["--crit-age=3600.5"], ["--warn-expired", "0", "--crit-expired", "5"], ["-q", "mail"], ["--queue=jobs", "-q", "mail"],
    ["-q", "nope"], ["-q", "a/b"], ["--check-types"], ["--jobs", "1"], ["-j", "2"], ["--layout", "ddmq"],
    ["--layout", "VSQS"], ["--layout", "bogus"], ["--read-only"], ["--audit-log", "/nonexistent/x"],
]


@pytest.mark.parametrize("args", CHECK_ARGS)
def test_check_fast_path_matches_typer(root, capsys, args):
    code, fast, res = _both(fast_check, "check", [str(root), *args], capsys)
    assert code == res.exit_code
    assert fast.err == res.stderr == ""
    assert _norm(fast.out) == _norm(res.stdout)
    assert fast.out.startswith("QCONSOLE ")


@pytest.mark.parametrize("where", ["missing", "not-a-root", "env", "option", "none"])
def test_check_fast_path_matches_typer_on_roots(root, tmp_path, capsys, monkeypatch, where):
    argv = {"missing": [str(tmp_path / "missing")], "not-a-root": [str(root / "jobs" / "1700000000000000")],
            "env": [], "option": ["--root", str(root)], "none": []}[where]
    if where == "env":
        monkeypatch.setenv("QCONSOLE_ROOT", str(root))
    code, fast, res = _both(fast_check, "check", argv, capsys)
    assert (code, _norm(fast.out), fast.err) == (res.exit_code, _norm(res.stdout), res.stderr)


LS_ARGS = [
    [], ["--json"], ["--state", "ready"], ["-s", "inflight", "--json"], ["--state=expired"], ["--state", "bogus"],
    ["--limit", "1"], ["-n", "2", "--json"], ["--limit=1", "--state", "ready"], ["--layout", "vsqs"],
    ["--layout", "ddmq"], ["--read-only"], ["--ids"], ["--ids", "-s", "inflight", "-n", "1"], ["--ids", "--json"],
]


@pytest.mark.parametrize("args", LS_ARGS)
@pytest.mark.parametrize("queue", ["jobs", "nope", "a/b", ".hidden"])
def test_ls_fast_path_matches_typer(root, capsys, args, queue):
    code, fast, res = _both(fast_ls, "ls", [queue, "-r", str(root), *args], capsys, env={"COLUMNS": "80"})
    assert code == res.exit_code
    assert fast.err == res.stderr
    assert _norm(fast.out) == _norm(res.stdout)
    if code == 0 and "--json" in args:
        assert json.loads(fast.out)["schema"] == "qconsole.ls/1"


def test_ls_fast_path_missing_root(tmp_path, capsys):
    code, fast, res = _both(fast_ls, "ls", ["jobs", "-r", str(tmp_path / "missing")], capsys)
    assert (code, fast.out, fast.err) == (res.exit_code, res.stdout, res.stderr) and code == 2


@pytest.mark.parametrize("command, args", [
    ("check", ["--help"]), ("check", ["--warn-ready"]), ("check", ["--warn-ready", "-1"]),
    ("check", ["--warn-ready", "x"]), ("check", ["--warn-age", "1e3"]), ("check", ["--warn-age", "nan"]),
    ("check", ["--jobs", "0"]), ("check", ["--bogus"]), ("check", ["a", "b"]), ("check", ["--check-types=1"]),
    ("ls", []), ("ls", ["q", "extra"]), ("ls", ["q", "--limit", "0"]), ("ls", ["q", "-n", "x"]),
    ("ls", ["q", "--watch", "1"]), ("ls", ["q", "-h"]), ("stats", ["--watch", "1"]),
])
def test_fast_path_declines_what_it_does_not_handle(command, args):
    assert parse_args(command, args) is None


def test_fast_path_declines_a_read_only_variable_typer_refuses(monkeypatch):
    monkeypatch.setenv("QCONSOLE_READ_ONLY", "maybe")
    assert parse_args("check", []) is None
    monkeypatch.setenv("QCONSOLE_READ_ONLY", "Yes")
    assert parse_args("check", []) is not None


@pytest.mark.parametrize("argv", [["check", "{root}", "--warn-ready", "1"], ["ls", "jobs", "-r", "{root}", "--json"],
                                  ["ls", "jobs", "-r", "{root}", "--ids"],
                                  ["check", "{root}", "--warn-age", "-5"], ["ls", "jobs"], ["check", "--help"]])
def test_installed_console_script_matches_typer(root, argv):
    """Through the real entry point (the fast path, or typer when it declines), without importing typer when fast."""
    argv = [a.format(root=root) for a in argv]
    exe = os.path.join(os.path.dirname(sys.executable), "qconsole")
    env = {k: v for k, v in os.environ.items() if k not in ("QCONSOLE_ROOT", "QCONSOLE_READ_ONLY")}
    env["COLUMNS"] = "80"
    out = subprocess.run([exe, *argv], capture_output=True, text=True, env=env, timeout=60)
    res = CliRunner().invoke(app, argv, env={"QCONSOLE_ROOT": None, "QCONSOLE_READ_ONLY": None, "COLUMNS": "80"})
    assert out.returncode == res.exit_code
    if "--help" not in argv:  # (typer wraps help to the terminal it finds)
        assert _norm(out.stdout) == _norm(res.stdout)
        assert out.stderr == res.stderr
    probe = ("import sys, runpy; sys.argv = ['qconsole', *%r]\n"
             "try:\n    runpy.run_module('qconsole', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print('TYPER' if 'typer' in sys.modules else 'NO-TYPER', file=sys.stderr)\n") % (argv,)
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    fast = "--help" not in argv and "-5" not in argv
    assert loaded.stderr.strip().splitlines()[-1] == ("NO-TYPER" if fast else "TYPER")
