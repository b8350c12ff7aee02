"""Every change to a store goes through one module (issue 9): this walks the code (AST) and
fails when a module other than ``qconsole/backends/fs/safety.py`` renames, links, unlinks or
removes files, removes trees, or opens a file for writing -- the same idea as
``test_import_hygiene.py``. A new store operation must be added to safety.py, where the path
confinement, no-symlink and safe-open rules live."""

from __future__ import annotations

import ast
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SAFETY = os.path.join("qconsole", "backends", "fs", "safety.py")
#: modules that write files that are not a store, each for a stated reason
NOT_A_STORE = {
    # the report's Parquet/JSON output goes to the --out directory the operator names
    os.path.join("qconsole", "report", "spark_job.py"),
    os.path.join("qconsole", "report", "inventory.py"),
    os.path.join("qconsole", "report", "outputs.py"),  # (and only an earlier report's output replaced)
    # ... and local mode's listing spool is a fresh directory under that --out, removed after the job
    os.path.join("qconsole", "report", "spool.py"),
    # RSMQ lives in Redis; this rewrites the process's own argv (/proc/self/mem) to hide a password
    os.path.join("qconsole", "backends", "rsmq", "target.py"),
    # screenshots (SVG) are written where asked; the demo roots they show are its own temp dirs
    os.path.join("screens", "shots.py"),
    # the demo's simulated producers/consumers play the *clients* on a throw-away root it made
    os.path.join("qconsole", "demo.py"),
    os.path.join("qconsole", "backends", "fs", "demo_files.py"),
    os.path.join("qconsole", "backends", "vsqs", "demo.py"),
    os.path.join("qconsole", "backends", "ddmq", "demo.py"),
    # ... and the RSMQ demo makes the socket directory of the private redis-server it starts
    os.path.join("qconsole", "backends", "rsmq", "demo.py"),
}
OS_CHANGES = {"rename", "renames", "link", "symlink", "unlink", "replace", "remove", "removedirs", "rmdir",
              "mkdir", "makedirs", "truncate", "mkfifo", "mknod"}
SHUTIL_CHANGES = {"rmtree", "move", "copy", "copy2", "copyfile", "copytree"}
PATH_CHANGES = {"write_text", "write_bytes", "touch", "symlink_to", "hardlink_to"}  # pathlib-only names
WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _modules() -> list[str]:
    out = []
    for top in ("qconsole", "screens"):
        for d, _dirs, files in os.walk(os.path.join(REPO, top)):
            out += [os.path.relpath(os.path.join(d, f), REPO) for f in files if f.endswith(".py")]
    return sorted(out)


def _names(node: ast.AST) -> set[str]:
    return {n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(node)
            if isinstance(n, (ast.Attribute, ast.Name))}


def _violations(rel: str) -> list[str]:
    with open(os.path.join(REPO, rel), encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), rel)
    found = []
    for node in ast.walk(tree):
        where = f"{rel}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.module in ("os", "shutil"):
            bad = {a.name for a in node.names} & (OS_CHANGES | SHUTIL_CHANGES)
            if bad:
                found.append(f"{where}: from {node.module} import {', '.join(sorted(bad))}")
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if f.value.id == "os" and f.attr in OS_CHANGES:
                found.append(f"{where}: os.{f.attr}")
            if f.value.id == "shutil" and f.attr in SHUTIL_CHANGES:
                found.append(f"{where}: shutil.{f.attr}")
            if f.value.id == "os" and f.attr == "open" and len(node.args) > 1 and _names(node.args[1]) & WRITE_FLAGS:
                found.append(f"{where}: os.open for writing")
        if isinstance(f, ast.Attribute) and f.attr in PATH_CHANGES and not (
                isinstance(f.value, ast.Name) and f.value.id in ("os", "c", "self")):
            found.append(f"{where}: .{f.attr}()")
        if isinstance(f, ast.Name) and f.id == "open":
            mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
            if mode is not None and not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                                         and not set(mode.value) & set("wax+")):
                found.append(f"{where}: open() for writing")
    return found


def test_only_safety_changes_the_store() -> None:
    bad = [v for rel in _modules() if rel != SAFETY and rel not in NOT_A_STORE for v in _violations(rel)]
    assert not bad, "store changes outside qconsole/backends/fs/safety.py:\n" + "\n".join(bad)


def test_the_walker_finds_what_it_looks_for(tmp_path) -> None:
    # the AST walk itself: each forbidden form is caught in a sample module
    sample = (
        "import os, shutil\nfrom os import rename\n"
        "os.rename('a', 'b')\nos.link('a', 'b')\nos.unlink('a')\nos.replace('a', 'b')\nos.remove('a')\n"
        "os.rmdir('a')\nshutil.rmtree('a')\nopen('a', 'w')\nopen('a', mode='ab')\n"
        "os.open('a', os.O_WRONLY | os.O_CREAT)\nopen('a', 'rb')\nos.open('a', os.O_RDONLY)\n"
    )
    path = os.path.join(REPO, "tests", f"_hygiene_sample_{os.getpid()}.py")
    with open(path, "w") as fh:
        fh.write(sample)
    try:
        found = _violations(os.path.relpath(path, REPO))
    finally:
        os.unlink(path)
    assert len(found) == 11, found
    assert os.path.exists(os.path.join(REPO, SAFETY))
