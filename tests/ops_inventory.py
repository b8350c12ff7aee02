"""Test helper: where every message of a root is, by payload (queues, work/, trash, leftovers)."""

from __future__ import annotations

import json
import os
from collections import Counter

from qconsole.backends.ddmq import layout as ddmq_layout
from qconsole.backends.vsqs import layout as vsqs_layout
from qconsole.backends.fs.listing import QC_TEMP_PREFIX


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def inventory(root: str, layout: str) -> tuple[Counter, list[str]]:
    """(payload -> number of places it is in, leftover/odd files)."""
    found: Counter = Counter()
    odd: list[str] = []
    for dirpath, _dirs, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir.startswith(".qconsole") and "trash" not in rel_dir:
            continue
        for name in files:
            path = os.path.join(dirpath, name)
            if name == "manifest.json" or name.startswith("ddmq.yaml") or name.endswith(".log"):
                continue
            if name.startswith(QC_TEMP_PREFIX):
                odd.append(os.path.relpath(path, root))
                continue
            if layout == "ddmq":
                if ddmq_layout.parse_waiting(name) or ddmq_layout.parse_work(name):
                    found[json.loads(_read(path))["message"]] += 1
                else:
                    odd.append(os.path.relpath(path, root))
            else:
                parsed = vsqs_layout.parse_name(name)
                if parsed is None or parsed[0] == "writing":
                    odd.append(os.path.relpath(path, root))
                else:
                    found[_read(path).decode()] += 1
    return found, odd


def tree(root: str) -> dict[str, bytes]:
    """Every file under root, with its content, except qconsole's own ``.qconsole`` state dir."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".qconsole")]
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out
