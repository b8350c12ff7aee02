"""The wheel ships `qconsole` alone at its top level, with the screens as qconsole.screens."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_package_of_the_tree_is_listed_and_screens_maps_to_qconsole_screens() -> None:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        tool = tomllib.load(fh)["tool"]["setuptools"]
    found = {"qconsole.screens"}
    for dirpath, _dirs, files in os.walk(os.path.join(ROOT, "qconsole")):
        if "__init__.py" in files:
            found.add(os.path.relpath(dirpath, ROOT).replace(os.sep, "."))
    assert set(tool["packages"]) == found
    assert tool["package-dir"] == {"qconsole.screens": "screens"}
    assert all(p == "qconsole" or p.startswith("qconsole.") for p in tool["packages"])
    assert tool["package-data"]["qconsole.screens"] == ["*.tcss"]


def test_screens_import_as_qconsole_screens_without_a_top_level_screens() -> None:
    code = ("import sys, qconsole.screens.app as a, os; "
            "print('screens' in sys.modules, os.path.exists(os.path.join(os.path.dirname(a.__file__), 'qconsole.tcss')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_screens_do_not_branch_on_the_kind_of_store() -> None:
    for name in os.listdir(os.path.join(ROOT, "screens")):
        if name.endswith(".py"):
            with open(os.path.join(ROOT, "screens", name), encoding="utf-8") as fh:
                text = fh.read()
            for word in ("DDMQ", "VSQS", "layout =="):
                assert word not in text, (name, word)
