"""ddmq settings as the client resolves them: defaults <- root ddmq.yaml <- queue ddmq.yaml.

Reading only (layer 1); saving is an operation (:mod:`qconsole.ops`). YAML is loaded with
``safe_load`` only, so ``!!python/...`` tags in a shared file can never run code.
"""

from __future__ import annotations

import os
from typing import Any

from ...errors import SettingsError
from ..base import Setting
from ..fs.detect import DDMQ_CONFIG
from ..fs.safety import MAX_PRIORITY
from .layout import MAX_TIMEOUT

CONFIG = DDMQ_CONFIG
DEFAULTS: dict[str, Any] = {
    "message_timeout": 600,
    "priority": 999,
    "requeue": True,
    "requeue_prio": 0,
    "cleaned": 0,
}
#: what each known key must be: non-negative int, or bool
KINDS: dict[str, type] = {
    "message_timeout": int,
    "priority": int,
    "requeue": bool,
    "requeue_prio": int,
    "cleaned": int,
}
DEFAULT, ROOT, QUEUE = "default", "root", "queue"
#: the largest integer setting: a priority's bound (a message name holds it), which every
#: sane timeout and timestamp is far below
MAX_INT = MAX_PRIORITY
#: tighter bounds than MAX_INT, per key
KEY_MAX = {"message_timeout": MAX_TIMEOUT}




def config_path(root: str, queue: str | None = None) -> str:
    return os.path.join(root, queue, CONFIG) if queue else os.path.join(root, CONFIG)


def load_config(path: str, *, link_is_empty: bool = False) -> dict[str, Any]:
    """A ddmq.yaml as a dict ({} when empty or missing); SettingsError when it is not a mapping.

    Read as every untrusted file is (:mod:`..fs.safety`): a symlink is not followed, a FIFO
    cannot block, the size is capped, and the YAML is loaded safely with limits on aliases,
    nesting and integer size (a billion-laughs file is refused, not expanded).
    ``link_is_empty``: a symlink there reads as no settings (a save then replaces the link,
    never reading or writing what it points to)."""
    from ...errors import QConsoleError
    from ..fs import safety

    if link_is_empty and os.path.islink(path):
        return {}
    try:
        raw = safety.read_regular(path, max_size=safety.MAX_YAML_BYTES)
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise SettingsError(f"{path}: {err.strerror}") from None
    except QConsoleError as err:
        raise SettingsError(str(err)) from None
    data = safety.load_yaml(raw, path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a mapping of settings, found {type(data).__name__}")
    return data


def effective(root: str, queue: str | None = None) -> dict[str, Setting]:
    """Every key's effective value and where it comes from; unknown keys included."""
    out = {k: Setting(k, v, DEFAULT) for k, v in DEFAULTS.items()}
    for source, path in ((ROOT, config_path(root)), (QUEUE, config_path(root, queue) if queue else None)):
        if path is None:
            continue
        for k, v in load_config(path).items():
            out[str(k)] = Setting(str(k), v, source)
    return out


def parse_value(key: str, text: str) -> Any:
    """Turn a command-line/form value into what ddmq expects; SettingsError when invalid."""
    kind = KINDS.get(key)
    raw = text.strip()
    if kind is bool:
        low = raw.lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        raise SettingsError(f"{key}: expected true or false, got {text!r}")
    if kind is int:
        if not (raw.isascii() and raw.isdigit()):
            raise SettingsError(f"{key}: expected a non-negative integer, got {text!r}")
        if len(raw.lstrip("0")) > len(str(MAX_INT)):  # before int(): 5,000 digits cost a while
            raise SettingsError(f"{key}: at most {MAX_INT}, got {len(raw)} digits")
        return int(raw)
    # unknown keys: keep YAML's own typing of a scalar, safely (and within the same limits)
    from ..fs import safety

    try:
        return safety.load_yaml(raw.encode("utf-8", "surrogateescape"), key) if raw else ""
    except SettingsError:
        return raw
    except Exception as err:  # noqa: BLE001 (PyYAML's constructors raise others: "!!timestamp x")
        raise SettingsError(f"{key}: YAML cannot build {raw!r} ({type(err).__name__}); "
                            "quote it to keep it as text") from None


def validate(values: dict[str, Any]) -> list[str]:
    """Problems with known keys' types/ranges (empty list: valid). Unknown keys are allowed."""
    problems = []
    for key, kind in KINDS.items():
        if key not in values:
            continue
        v = values[key]
        if kind is bool and not isinstance(v, bool):
            problems.append(f"{key}: expected true or false, got {v!r}")
        elif kind is int and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            problems.append(f"{key}: expected a non-negative integer, got {v!r}")
        elif kind is int and v > KEY_MAX.get(key, MAX_INT):
            # saved, it would be refused on every read after (qconsole's loader, and a priority
            # that long makes file names the client cannot create)
            problems.append(f"{key}: at most {KEY_MAX.get(key, MAX_INT)}, got {len(str(v))} digits")
    return problems
