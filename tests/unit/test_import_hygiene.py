"""The core and the CLI never import Textual, PySpark or redis; `qconsole stats` on a file root
imports none of those and not typer either (start-up time of every monitoring run)."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("textual", "pyspark", "redis")
#: what the typer-free stats path must not load either
STATS_HEAVY = (*HEAVY, "typer", "click", "pydantic", "rsmq")


def _loaded_after(code: str, heavy: tuple[str, ...] = HEAVY) -> set[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in %r)))" % (heavy,)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import json

    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_core_and_cli():
    assert _loaded_after("import qconsole, qconsole.cli, qconsole.backends, qconsole.backends.fs.root, qconsole.payload, qconsole.backends.ddmq.settings") == set()


def test_stats_json_run_via_main(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "1700000000000000").write_text("x")
    code = (
        "import sys, io, contextlib\n"
        f"sys.argv = ['qconsole', 'stats', {str(tmp_path)!r}, '--json']\n"
        "from qconsole.__main__ import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    try:\n        main()\n    except SystemExit as e:\n        assert not e.code, e.code\n"
        "assert '\"qconsole.stats/2\"' in buf.getvalue(), buf.getvalue()\n"
    )
    assert _loaded_after(code, STATS_HEAVY) == set()


def test_stats_json_run_as_module_script(tmp_path):
    (tmp_path / "jobs").mkdir()
    code = (
        "import runpy, sys, io, contextlib, shutil\n"
        f"sys.argv = ['qconsole', 'stats', {str(tmp_path)!r}, '--format', 'prometheus']\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    try:\n        runpy.run_path(shutil.which('qconsole') or sys.argv[0], run_name='__main__')\n"
        "    except SystemExit as e:\n        assert not e.code, e.code\n"
        "assert 'qconsole_messages' in buf.getvalue(), buf.getvalue()\n"
    )
    import os

    env_path = os.path.dirname(sys.executable)
    code = code.replace("shutil.which('qconsole')", f"shutil.which('qconsole', path={env_path!r})")
    assert _loaded_after(code, STATS_HEAVY) == set()


def test_the_stats_modules_import_no_client_library():
    assert _loaded_after("import qconsole, qconsole.backends, qconsole.fastpath", STATS_HEAVY) == set()
