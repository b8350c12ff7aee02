"""The two on-disk layouts and how to tell them apart."""

from __future__ import annotations

import errno
import os
import stat

from ...errors import RootError
from ...states import DDMQ, LAYOUTS, VSQS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from types import ModuleType

#: ddmq's marker file, here so that telling the layouts apart imports neither module
DDMQ_CONFIG = "ddmq.yaml"
DDMQ_WORK = "work"
#: the file system's own directory at a mount point
LOST_FOUND = "lost+found"


def is_ddmq_queue_dir(path: str, dir_fd: int | None = None) -> bool:
    """ddmq's own check_dir(): a ``ddmq.yaml`` file and a ``work`` directory -- a real one:
    a ``work`` that is a symlink is never followed, so that queue is not one here.
    ``dir_fd``: ``path`` is relative to that directory (a root of thousands of queues is
    checked without resolving the root's path twice per queue).
    (Here rather than in the ddmq module: detection must not import it for a VSQS root.)"""
    try:
        if not stat.S_ISREG(os.stat(f"{path}/{DDMQ_CONFIG}", dir_fd=dir_fd).st_mode):
            return False
        # one lstat: a directory, and not a link to one
        return stat.S_ISDIR(os.stat(f"{path}/{DDMQ_WORK}", dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except (OSError, ValueError):
        return False


def ddmq_queue_dir_unknown(path: str, dir_fd: int | None = None) -> bool:
    """Whether ``path`` could not be looked into to tell if it is a ddmq queue (no search
    permission, an I/O error): such a directory is shown as a queue that cannot be read, as
    VSQS shows it, rather than left out of every count (a blind spot in ``check``). Not
    ``lost+found``: a root that is a mount point has one no operator can read, and it is never a
    queue (``check`` would warn for ever)."""
    if os.path.basename(path) == LOST_FOUND:
        return False
    try:
        os.stat(f"{path}/{DDMQ_CONFIG}", dir_fd=dir_fd)
    except OSError as err:
        return err.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP)
    except ValueError:
        return False
    return False


def module_for(layout: str) -> ModuleType:
    """The layout's module, imported on first use: a run needs only one of them."""
    if layout == DDMQ:
        from ..ddmq import layout as ddmq

        return ddmq
    if layout == VSQS:
        from ..vsqs import layout as vsqs

        return vsqs
    raise KeyError(layout)


def detect_layout(root: str) -> str:
    """``ddmq`` if the root (or a queue in it) has ``ddmq.yaml``; ``vsqs`` if its sub-directories
    look like VSQS queues; otherwise RootError. Reads a few listings, never file contents."""
    if os.path.isfile(os.path.join(root, DDMQ_CONFIG)):
        return DDMQ
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise RootError(f"cannot read root {root}: {err.strerror}") from None
    try:  # each sub-directory is checked relative to the root's descriptor: no path per queue
        from .listing import plain_c

        got = plain_c.config_dirs(root, DDMQ_CONFIG) if hasattr(plain_c, "config_dirs") else None
        if got is not None:  # the same look in C: a VSQS root of 2,000 queues is told in ~3 ms, not ~7
            subdirs, maybe = got
        else:
            with os.scandir(fd) as it:
                subdirs = [e.name for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
            # a VSQS root of thousands of queues: os.access raises nothing for the ddmq.yaml that is
            # not there (a failed stat's OSError costs more than the lookup: detection 6 -> 4 ms per
            # 2,000); by effective ids, as stat goes, so a setuid wrapper sees what it may open
            maybe = [name for name in subdirs
                     if os.access(f"{name}/{DDMQ_CONFIG}", os.F_OK, dir_fd=fd, effective_ids=True)]
        if any(is_ddmq_queue_dir(name, fd) for name in maybe):
            return DDMQ
    except OSError as err:
        raise RootError(f"cannot read root {root}: {err.strerror}") from None
    finally:
        os.close(fd)
    looks_like_queue = module_for(VSQS).looks_like_queue
    for name in subdirs:
        try:
            if looks_like_queue(os.path.join(root, name)):
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
        raise RootError(f"unknown layout {layout!r}: use auto, vsqs or ddmq (rsmq for a Redis target)")
    return layout
