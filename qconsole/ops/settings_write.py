"""Saving ddmq.yaml: validated, unknown keys kept, written by temp + rename (never through a symlink)."""

from __future__ import annotations

import os
import stat
from typing import Any

from ..settings import SettingsError, config_path, load_config, validate
from .claims import CFG, new_token, owned_name
from .fsatomic import replace_file


def save(root: str, queue: str | None, values: dict[str, Any]) -> dict[str, Any]:
    """Merge ``values`` into the file and write it atomically; returns what was written."""
    import yaml

    bad_keys = [k for k in values if not isinstance(k, str) or not k.strip()]
    if bad_keys:
        raise SettingsError(f"bad setting name {bad_keys[0]!r}")
    problems = validate(values)
    if problems:
        raise SettingsError(problems[0])
    path = config_path(root, queue)
    current = load_config(path)
    merged = dict(current)
    merged.update(values)
    mode = None
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            mode = stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        pass
    text = yaml.safe_dump(merged, default_flow_style=False, sort_keys=False)
    replace_file(path, text.encode(), owned_name(CFG, new_token()), mode=mode)
    return merged


def validate_or_raise(values: dict[str, Any]) -> None:
    bad_keys = [k for k in values if not isinstance(k, str) or not k.strip()]
    if bad_keys:
        raise SettingsError(f"bad setting name {bad_keys[0]!r}")
    problems = validate(values)
    if problems:
        raise SettingsError(problems[0])
