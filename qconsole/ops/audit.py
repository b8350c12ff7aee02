"""The audit log: one JSON line per mutation, appended with a single O_APPEND write."""

from __future__ import annotations

import datetime as _dt
import getpass
import json
import os
import socket
from typing import Any

from ..errors import QConsoleError
from ..model import STATE_DIR
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


def append(path: str, doc: dict[str, Any], root: str | None = None) -> None:
    """Append one line with one O_APPEND write. Inside ``root`` no link on the way is followed;
    anywhere, the log must be a regular file (a FIFO there fails at once, it never blocks)."""
    from ..backends.fs import safety

    line = (json.dumps(doc, ensure_ascii=True, default=str) + "\n").encode()
    inside = _inside(root, path) if root else None
    if inside is not None:  # by where it really is: a link on the way, a relative path, are no way round
        safety.append_line_confined(inside[0], inside[1], line)
    else:
        # only the operator's own state directory is made; a mistyped --audit-log directory is not
        where = os.path.abspath(path)
        safety.append_line(where, line, follow=True, make_dirs=os.path.dirname(where) == os.path.abspath(state_home()))


def spare_path(root: str | None, path: str) -> str | None:
    """Where a record goes when the log ``path`` inside ``root`` refused it: the operator's own
    state directory (None when ``path`` is not in the root, or is that log already)."""
    spare = os.path.join(state_home(), LOG_NAME)
    if not root or _inside(root, path) is None or os.path.abspath(path) == spare:
        return None
    return spare


def _inside(root: str, path: str) -> tuple[str, str] | None:
    """(a root, the log's path under it) when ``path`` lies in the root as written (then every
    step from the root is taken without following links: a planted ``.qconsole`` link to
    elsewhere is refused) or really does (its directory resolved: a link from elsewhere into
    a queue is inside); None when neither."""
    from ..backends.fs import safety

    if safety.under(root, os.path.abspath(path)):
        return os.path.abspath(root), os.path.abspath(path)
    real_root = os.path.realpath(root)
    real = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    return (real_root, real) if safety.under(real_root, real) else None


#: bytes of the log read at most (its end): tens of thousands of entries
READ_WINDOW = 64 << 20
#: the longest line parsed: an entry lists at most 1,000 ids and 1,000 skips (~0.2 MB)
MAX_LINE = 1 << 20
#: the most entries read (the last ones): a window of 64 MiB of planted ``{}`` lines is 22
#: million of them (95 s and 2.9 GB to show); qconsole's own run to ~300 bytes each
MAX_ENTRIES = 100_000


def read(path: str, tail: int | None = None, root: str | None = None) -> list[dict[str, Any]]:
    """The last ``tail`` records (all when None); unparsable lines come back as ``{"raw": ...}``."""
    from ..backends.fs import safety

    try:
        if root and safety.under(root, path):
            with safety.Confined(root) as c:
                data = c.read(path, last=READ_WINDOW + 1)
        else:
            data = safety.read_regular(path, follow=True, last=READ_WINDOW + 1)
    except FileNotFoundError:
        return []
    except OSError as err:
        raise QConsoleError(f"audit log {path}: {err.strerror}") from None
    except QConsoleError as err:
        raise QConsoleError(f"audit log: {err}") from None
    out = []
    if len(data) > READ_WINDOW:  # a log this long (or a planted one): its last entries only
        data = data[data.find(b"\n", 1) + 1:] if b"\n" in data[1:] else b""
        out.append({"raw": f"(earlier entries not read: only the log's last {READ_WINDOW >> 20} MiB are)"})
    keep = min(tail or MAX_ENTRIES, MAX_ENTRIES)
    data, cut = _last_lines(data, keep)
    lines = data.splitlines(keepends=True)
    if len(lines) > keep:
        lines, cut = lines[-keep:], True
    if cut and keep == MAX_ENTRIES:
        out.append({"raw": f"(earlier entries not shown: at most the last {MAX_ENTRIES:,} are read)"})
    for raw in lines:
        if len(raw) > MAX_LINE:  # not one qconsole writes: parsed, a planted one takes GBs
            out.append({"raw": f"(a line of {len(raw):,} bytes, longer than any entry qconsole writes: not read)"})
            continue
        try:
            doc = json.loads(raw)
            out.append(doc if isinstance(doc, dict) else {"raw": raw.decode("utf-8", "replace").rstrip()})
        except (ValueError, RecursionError):
            out.append({"raw": raw.decode("utf-8", "replace").rstrip()})
    return out


def _last_lines(data: bytes, n: int) -> tuple[bytes, bool]:
    """The last ``n`` lines of ``data`` and whether any went, without splitting the others."""
    at = len(data) - 1 if data.endswith(b"\n") else len(data)
    for _ in range(n):
        at = data.rfind(b"\n", 0, at)
        if at < 0:
            return data, False
    return data[at + 1:], True
