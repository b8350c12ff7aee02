"""The report's output directory: never the queue root, and only its own earlier output replaced.

``report --out DIR`` writes ``DIR/messages`` and ``DIR/trends`` (Parquet) and ``DIR/summary.json``.
An earlier run's ``messages``/``trends`` are replaced; removing them wholesale (as Spark's
``mode("overwrite")`` does) took a queue named ``messages`` with it when ``--out`` was the
root, and an operator's own files in any ``DIR/messages``. Here a directory is removed only
when every entry in it is a file a report writes, and ``--out`` may not overlap a file root.
"""

from __future__ import annotations

import os
import re
import stat

from ..errors import QConsoleError

#: what a report leaves in messages/ (pyarrow parts and their tmps) and trends/ (Spark's writer)
OUTPUT_NAME = re.compile(
    r"(?:part-[\w.-]+\.parquet|\.part-[\w.-]+\.parquet\.tmp|_SUCCESS|\.[\w.-]+\.crc)\Z", re.ASCII)


def check_out(out: str, root: str | None) -> str:
    """``out`` made absolute; QConsoleError when it is, holds or lies inside the file root
    ``root`` (None: the store is not a directory), or is a file."""
    path = os.path.abspath(out)
    if os.path.lexists(path) and not os.path.isdir(path):
        raise QConsoleError(f"--out {out}: not a directory")
    if root is not None:
        real_out, real_root = os.path.realpath(path), os.path.realpath(root)
        if _within(real_out, real_root) or _within(real_root, real_out):
            raise QConsoleError(f"--out {out}: overlaps the queue root {root}; the report writes there "
                                "(choose a directory outside it)")
    return path


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def clear_previous(path: str) -> None:
    """Remove ``path`` if it is an earlier report's output directory; nothing there is fine.
    QConsoleError (nothing removed) when it is a link, or holds anything a report does not write."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        raise QConsoleError(f"{path}: not a directory a report wrote; not replaced (choose another --out)")
    names = os.listdir(path)
    foreign = [n for n in names if not OUTPUT_NAME.match(n) or not stat.S_ISREG(os.lstat(os.path.join(path, n)).st_mode)]
    if foreign:
        raise QConsoleError(f"{path}: holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} no report "
                            f"wrote (for example {foreign[0]!r}); not replaced (choose another --out)")
    for name in names:
        try:
            os.unlink(os.path.join(path, name))
        except FileNotFoundError:
            pass
    os.rmdir(path)


def write_text(path: str, text: str) -> None:
    """``text`` into ``path`` by a fresh tmp beside it and a rename: a link planted at either
    name is replaced, never written through."""
    tmp = os.path.join(os.path.dirname(path), f".qconsole-{os.path.basename(path)}.tmp")
    try:
        os.unlink(tmp)  # a leftover (or planted) tmp: the name only
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
