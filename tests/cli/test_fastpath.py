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


def _tree(root) -> list[tuple[str, str, str]]:
    """What a change left: every file under the root but qconsole's own bookkeeping, as
    (directory, name, content); in dest/ without the name (a move gives new, time-based ids)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".qconsole"]
        where = os.path.relpath(dirpath, root)
        for f in filenames:
            with open(os.path.join(dirpath, f)) as fh:
                out.append((where, "*" if where == "dest" else f, fh.read()))
    return sorted(out)


def _audit(path) -> list[tuple]:
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        docs = [json.loads(line) for line in fh]
    return [(d.get("action"), d.get("queue"), d.get("outcome"), d.get("count"), sorted(d.get("ids") or []),
             d.get("source")) for d in docs]


def _changed_root(base):
    base.mkdir()
    for q in ("jobs", "dest"):
        (base / q).mkdir()
    jobs = base / "jobs"
    for i in range(6):
        (jobs / str(1700000000000000 + i)).write_text(f"r{i}")
    (jobs / "1700000000000010.1700000000000002").write_text("expired")
    (jobs / "1700000000000011.9700000000000002").write_text("in flight")
    (jobs / "1700000000000012.new").write_text("")
    (jobs / "README").write_text("not a message")
    return base


#: (argv, stdin): changes the console script runs without typer, and some it hands to typer
CHANGES = [
    (["requeue", "jobs", "--expired"], None), (["requeue", "jobs", "--all"], None),
    (["requeue", "jobs", "1700000000000010"], None), (["requeue", "jobs", "1700000000000000"], None),
    (["requeue", "jobs", "404"], None), (["requeue", "nope", "--all"], None), (["requeue", "jobs"], None),
    (["requeue", "jobs", "-"], "1700000000000010\n404\n"), (["requeue", "jobs", "-"], ""),
    (["requeue", "jobs", "-", "1700000000000010"], None), (["requeue", "jobs", "--all", "--read-only"], None),
    (["requeue", "jobs", "--all", "--layout", "ddmq"], None), (["requeue", "../x", "--all"], None),
    (["delete", "jobs", "1700000000000001", "1700000000000002", "--yes"], None),
    (["delete", "jobs", "1700000000000001", "-y", "--no-trash"], None), (["delete", "jobs", "404", "--yes"], None),
    (["delete", "jobs", "-", "--yes"], "1700000000000003\n1700000000000011\n"),
    (["delete", "jobs", "1700000000000001"], None), (["delete", "jobs", "--yes"], None),
    (["purge", "jobs", "--yes"], None), (["purge", "jobs", "-y", "--no-trash", "--state", "ready"], None),
    (["purge", "jobs", "--yes", "--state", "writing"], None), (["purge", "jobs"], None),
    (["move", "jobs", "dest", "--all"], None), (["move", "jobs", "dest", "1700000000000004"], None),
    (["move", "jobs", "dest", "-s", "expired"], None), (["move", "jobs", "nope", "--all"], None),
    (["move", "jobs", "dest", "-"], "1700000000000005\n"), (["move", "jobs"], None),
    (["requeue", "jobs", "--all", "--bogus"], None), (["requeue", "jobs", "--expired=1"], None),
    # Redis TLS options are taken out of argv first on both paths, wherever they stand: here
    # --audit-log then takes -y as its value, so the purge must ask (and is refused, no terminal)
    (["purge", "jobs", "--audit-log", "--insecure", "-y"], None), (["requeue", "jobs", "--ca", "x", "--all"], None),
    (["requeue", "jobs", "--all", "--insecure", "--ca=y"], None),
]


@pytest.mark.parametrize("argv,stdin", CHANGES)
@pytest.mark.parametrize("read_only_env", [None, "yes", "0"])
def test_changes_through_the_console_script_match_typer(tmp_path, argv, stdin, read_only_env):
    _compare_paths(tmp_path, argv, stdin, read_only_env)


@pytest.mark.parametrize("argv", [["trash", "restore"], ["trash", "restore", "{batch}"], ["trash", "restore", "nope"],
                                  ["trash", "restore", "--read-only"], ["trash", "restore", "a", "b"]])
def test_trash_restore_through_the_console_script_matches_typer(tmp_path, argv):
    def purged(root) -> str:
        res = CliRunner().invoke(app, ["purge", "jobs", "--yes", "--state", "ready", "--root", str(root),
                                       "--audit-log", os.devnull], env={"QCONSOLE_ROOT": None})
        return re.search(r"restore (\S+)\)", res.stdout).group(1)

    def prepare(a, b) -> list[str]:
        batch, _ = purged(a), purged(b)
        # the same batch id in both roots: move b's batch to a's name
        (b_batch,) = os.listdir(b / ".qconsole" / "trash")
        os.rename(b / ".qconsole" / "trash" / b_batch, b / ".qconsole" / "trash" / batch)
        return [x.format(batch=batch) for x in argv]

    _compare_paths(tmp_path, argv, None, None, prepare=prepare,
                   fast=argv[-1] != "b")  # (an extra argument: typer's usage error)


def test_an_unexpected_error_is_one_line_and_exit_70_on_both_paths(tmp_path):
    """A queue name stdout cannot encode: the change is made, then printing its line fails."""
    for side in ("a", "b"):
        (tmp_path / side / "jöbs").mkdir(parents=True)
        (tmp_path / side / "jöbs" / "1700000000000010.1700000000000002").write_text("x")
    env = {k: v for k, v in os.environ.items() if k not in ("QCONSOLE_ROOT", "QCONSOLE_READ_ONLY", "QCONSOLE_DEBUG")}
    env["PYTHONIOENCODING"] = "ascii"
    exe = os.path.join(os.path.dirname(sys.executable), "qconsole")
    fast = subprocess.run([exe, "requeue", "jöbs", "--all", "-r", str(tmp_path / "a"), "--audit-log", os.devnull],
                          capture_output=True, text=True, env=env, timeout=60)
    typer_side = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['qconsole', *%r]\n"
                                 "from qconsole.cli import main\nmain()\n"
                                 % (["requeue", "jöbs", "--all", "-r", str(tmp_path / "b"), "--audit-log", os.devnull],)],
                                capture_output=True, text=True, env=env, timeout=60)
    assert fast.returncode == typer_side.returncode == 70
    assert fast.stderr.startswith("qconsole: internal error: UnicodeEncodeError") and "Traceback" not in fast.stderr
    assert fast.stderr.count("\n") == 1 and typer_side.stderr.startswith("qconsole: internal error: UnicodeEncodeError")
    assert os.listdir(tmp_path / "a" / "jöbs") == os.listdir(tmp_path / "b" / "jöbs") == ["1700000000000010"]


def _compare_paths(tmp_path, argv, stdin, read_only_env, *, prepare=None, fast=None):
    """The same change on two copies of a root, by the console script (without typer when the
    form never prompts) and by the typer app: the same output, errors, exit code, tree and
    audit lines; and typer is imported only for the forms the fast path hands on."""
    fast_root, typer_root = _changed_root(tmp_path / "a"), _changed_root(tmp_path / "b")
    if prepare is not None:
        argv = prepare(fast_root, typer_root)
    env = {k: v for k, v in os.environ.items() if k not in ("QCONSOLE_ROOT", "QCONSOLE_READ_ONLY")}
    if read_only_env is not None:
        env["QCONSOLE_READ_ONLY"] = read_only_env
    probe = ("import sys, runpy; sys.argv = ['qconsole', *%r]\n"
             "try:\n    runpy.run_module('qconsole', run_name='__main__')\nexcept SystemExit as e:\n"
             "    code = e.code\nelse:\n    code = 0\n"
             "print('TYPER' if 'typer' in sys.modules else 'NO-TYPER', file=sys.stderr)\nsys.exit(code)\n")
    fast_argv = [*argv, "--root", str(fast_root), "--audit-log", str(tmp_path / "a.log")]
    out = subprocess.run([sys.executable, "-c", probe % (fast_argv,)], capture_output=True, text=True, env=env,
                         input=stdin if stdin is not None else "", timeout=60)
    # the typer CLI's own entry point (its argv rewriting and last-resort handler included)
    typer_argv = [*argv, "--root", str(typer_root), "--audit-log", str(tmp_path / "b.log")]
    res = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['qconsole', *%r]\n"
                          "from qconsole.cli import main\nmain()\n" % (typer_argv,)],
                         capture_output=True, text=True, env=env, input=stdin if stdin is not None else "", timeout=60)
    *err_lines, loaded = out.stderr.splitlines()
    batch = re.compile(r"[0-9]{8}T[0-9]{6}-[0-9a-f]+")
    assert out.returncode == res.returncode, (out.stderr, res.stderr)
    assert batch.sub("B", out.stdout) == batch.sub("B", res.stdout)
    assert "\n".join(err_lines).replace(str(fast_root), "R") == res.stderr.rstrip("\n").replace(str(typer_root), "R")
    assert _tree(fast_root) == _tree(typer_root)
    assert _audit(tmp_path / "a.log") == _audit(tmp_path / "b.log")
    if fast is not None:
        assert loaded == ("NO-TYPER" if fast else "TYPER"), argv
        return
    prompts = argv[0] in ("delete", "purge") and not {"--yes", "-y"} & set(argv) or "--audit-log" in argv
    fast = not prompts and "--bogus" not in argv and "--expired=1" not in argv and argv[1:] != [] and \
        argv != ["move", "jobs"] and argv != ["delete", "jobs", "--yes"]
    assert loaded == ("NO-TYPER" if fast else "TYPER"), argv
