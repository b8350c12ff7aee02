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


#: what `stats --json` and `check` on a plain VSQS root start without: ~10 ms of a ~28 ms start
#: (enum alone ~4 ms with functools and collections), run every minute by monitoring
STDLIB_HEAVY = ("re", "enum", "json", "functools", "collections", "typing", "dataclasses", "array",
                "unicodedata")


def _stdlib_loaded_after(argv: list[str]) -> set[str]:
    # -S: no site-packages, so no editable-install finder (which imports re and pathlib itself);
    # the checkout is put on the path by hand, as an installed package would be found
    import os

    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    probe = (
        f"import sys, io\nsys.path.insert(0, {checkout!r})\nsys.argv = {argv!r}\n"
        "from qconsole.__main__ import main\n"
        "out, sys.stdout = sys.stdout, io.TextIOWrapper(io.BytesIO(), encoding='utf-8')\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
        "sys.stdout.flush()\n"
        "text, sys.stdout = sys.stdout.buffer.getvalue().decode(), out\n"
        f"print(sorted(m for m in sys.modules if m in {STDLIB_HEAVY!r}))\n"
        "print(code, repr(text[:60]))\n"
    )
    out = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded, code = out.stdout.strip().splitlines()
    assert code.startswith("0 "), code  # it ran, and ran well
    import ast

    return set(ast.literal_eval(loaded))


def test_stats_and_check_on_a_plain_root_start_without_heavy_stdlib_modules(tmp_path):
    for q in ("jobs", "mail"):
        (tmp_path / q).mkdir()
        (tmp_path / q / "1700000000000000").write_text("x")
        (tmp_path / q / "1700000000000001.1700000000500000").write_text("y")
    assert _stdlib_loaded_after(["qconsole", "stats", str(tmp_path), "--json"]) == set()
    assert _stdlib_loaded_after(["qconsole", "check", str(tmp_path)]) == set()
    # `ls` of a small queue: its columns are lists, not arrays (array imports collections)
    for argv in (["ls", "jobs"], ["ls", "jobs", "--json"], ["ls", "jobs", "--ids"]):
        assert _stdlib_loaded_after(["qconsole", *argv, "--root", str(tmp_path)]) == set(), argv


def test_stats_and_check_on_a_small_ddmq_root_start_without_heavy_stdlib_modules(tmp_path):
    # mixed priorities and held messages: the counts take the short path's loops, not a Counter
    (tmp_path / "ddmq.yaml").write_text("")
    for q in ("jobs", "mail"):
        (tmp_path / q / "work").mkdir(parents=True)
        (tmp_path / q / "ddmq.yaml").write_text("message_timeout: 600\n")
        for i, prio in enumerate((999, 999, 10, 1)):
            (tmp_path / q / f"{prio}.170000000000{i}.ddmq{'ab' * 8}{i}").write_text("{}")
        (tmp_path / q / "work" / f"1700000600.10.1700000000009.ddmq{'cd' * 8}").write_text("{}")
        (tmp_path / q / "work" / f"9999999999.1.1700000000010.ddmq{'ef' * 8}").write_text("{}")
    for argv in (["stats", str(tmp_path), "--json"], ["check", str(tmp_path)]):
        assert _stdlib_loaded_after(["qconsole", *argv]) == set(), argv
