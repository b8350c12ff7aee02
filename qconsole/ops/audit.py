"""The audit log: one JSON line per mutation, appended with a single O_APPEND write."""

from __future__ import annotations

import datetime as _dt
import getpass
import json
import os
import socket
from collections import deque
from typing import Any

from ..errors import QConsoleError

STATE_DIR = ".qconsole"
LOG_NAME = "audit.log"


def state_home() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "qconsole")


def _writable_dir(path: str) -> bool:
    if os.path.isdir(path):
        return os.access(path, os.W_OK | os.X_OK)
    parent = os.path.dirname(path)
    return os.path.isdir(parent) and os.access(parent, os.W_OK | os.X_OK)


def default_path(root: str) -> str:
    """``<root>/.qconsole/audit.log`` when writable, else the user's state directory."""
    in_root = os.path.join(root, STATE_DIR)
    log = os.path.join(in_root, LOG_NAME)
    if _writable_dir(in_root) and (not os.path.exists(log) or os.access(log, os.W_OK)):
        return log
    return os.path.join(state_home(), LOG_NAME)


def user_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in a container
        return str(os.getuid())


def record(root: str, queue: str | None, action: str, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "user": user_name(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "root": root,
        "queue": queue,
        "action": action,
    }
    doc.update(fields)
    return doc


def append(path: str, doc: dict[str, Any]) -> None:
    """Append one line; the directory is created (mode from umask) when missing."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    line = (json.dumps(doc, ensure_ascii=True, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read(path: str, tail: int | None = None) -> list[dict[str, Any]]:
    """The last ``tail`` records (all when None); unparsable lines come back as ``{"raw": ...}``."""
    try:
        with open(path, "rb") as fh:
            lines = deque(fh, maxlen=tail) if tail else list(fh)
    except FileNotFoundError:
        return []
    except OSError as err:
        raise QConsoleError(f"audit log {path}: {err.strerror}") from None
    out = []
    for raw in lines:
        try:
            doc = json.loads(raw)
            out.append(doc if isinstance(doc, dict) else {"raw": raw.decode("utf-8", "replace").rstrip()})
        except ValueError:
            out.append({"raw": raw.decode("utf-8", "replace").rstrip()})
    return out
