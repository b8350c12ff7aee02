"""The two on-disk layouts and how to tell them apart."""

from __future__ import annotations

import os
from types import ModuleType

from ..errors import RootError
from ..states import DDMQ, LAYOUTS, VSQS
from . import ddmq, vsqs

_MODULES: dict[str, ModuleType] = {VSQS: vsqs, DDMQ: ddmq}


def module_for(layout: str) -> ModuleType:
    return _MODULES[layout]


def detect_layout(root: str) -> str:
    """``ddmq`` if the root (or a queue in it) has ``ddmq.yaml``; ``vsqs`` if its sub-directories
    look like VSQS queues; otherwise RootError. Reads a few listings, never file contents."""
    if os.path.isfile(os.path.join(root, ddmq.CONFIG)):
        return DDMQ
    try:
        subdirs = [
            e.path for e in os.scandir(root)
            if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
        ]
    except OSError as err:
        raise RootError(f"cannot read root {root}: {err.strerror}") from None
    if any(ddmq.is_queue_dir(p) for p in subdirs):
        return DDMQ
    for path in subdirs:
        try:
            if vsqs.looks_like_queue(path):
                return VSQS
        except OSError:
            continue
    raise RootError(
        f"{root} holds neither layout: no ddmq.yaml and no sub-directory that looks like a "
        "VSQS queue (use --layout vsqs|ddmq to say which it is)"
    )


def resolve_layout(root: str, layout: str | None) -> str:
    if layout in (None, "", "auto"):
        return detect_layout(root)
    if layout not in LAYOUTS:
        raise RootError(f"unknown layout {layout!r}: use auto, vsqs or ddmq")
    return layout
