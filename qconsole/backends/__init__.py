"""Layer 1: the stores. :func:`open_target` turns what the operator typed (a directory, or an
RSMQ target: ``redis://``, ``rediss://``, ``unix://``) into a :class:`~qconsole.backends.base.Backend`.

Only the backend that is needed gets imported (``qconsole stats`` on a VSQS root never
imports ddmq's settings code, nor redis).
"""

from __future__ import annotations

from .base import Backend

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from typing import Any

#: every kind of store, for help texts and option lists (imported lazily by :func:`backend_class`)
KINDS = ("vsqs", "ddmq", "rsmq")
#: the kinds whose root is a directory
FILE_KINDS = ("vsqs", "ddmq")
LAYOUT_CHOICES = ("auto", *KINDS)


def pick_root(positional: str | None, option: str | None) -> str | None:
    """The target the operator chose: a positional ROOT or --root (both given, they must name
    the same: `stats v -r d` ran on v and ignored d), else $QCONSOLE_ROOT (the same rule for
    the typer CLI and the typer-free fast path)."""
    import os

    env = os.environ.get("QCONSOLE_ROOT")
    if positional and option and option != env and not same_target(positional, option):
        from ..errors import QConsoleError  # (typer fills --root from the variable: that one yields)

        raise QConsoleError(f"two roots given: {positional!r} and --root {option!r}; give one")
    return positional or option or env or None


def same_target(a: str, b: str) -> bool:
    """Whether two targets name the same thing: the same text, or one directory spelt two ways
    (``v`` and ``v/``, a relative and an absolute path, a link to it)."""
    import os

    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def backend_class(kind: str) -> type[Backend]:
    if kind == "vsqs":
        from .vsqs.backend import VsqsBackend

        return VsqsBackend
    if kind == "ddmq":
        from .ddmq.backend import DdmqBackend

        return DdmqBackend
    if kind == "rsmq":
        from .rsmq.backend import RsmqBackend

        return RsmqBackend
    raise KeyError(kind)


def all_publish_options() -> list[tuple[str, Any]]:
    """(kind, Option) for every backend: the CLI builds its publish flags from these."""
    return [(k, o) for k in KINDS for o in backend_class(k).publish_options]


def open_target(target: str | os.PathLike[str] | None, layout: str | None = "auto") -> Backend:
    """The backend for ``target``; RootError (one line) when it is missing or holds no known store."""
    from ..errors import RootError
    from .fs.detect import resolve_layout
    from .fs.root import resolve_root

    if is_redis_target(target):
        if layout not in (None, "", "auto", "rsmq"):
            raise RootError(f"a Redis target is an RSMQ namespace, not --layout {layout}")
        from .rsmq.backend import RsmqBackend

        return RsmqBackend.open(str(target))
    if layout == "rsmq":
        raise RootError("--layout rsmq needs a Redis target: redis://host[:port][/db][?ns=NAME], rediss://... or unix:///path")
    path = resolve_root(target)
    return backend_class(resolve_layout(path, layout))(path)


def is_redis_target(target: object) -> bool:
    """``redis://``, ``rediss://`` or ``unix://`` (no redis import: this only looks at the text)."""
    if not isinstance(target, str):
        return False
    scheme, sep, _rest = target.partition("://")
    return bool(sep) and scheme.lower() in ("redis", "rediss", "unix")


def reopen(spec: dict[str, Any]) -> Backend:
    """A backend again from :meth:`Backend.reopen_spec` (on a Spark executor)."""
    return open_target(spec["target"], spec.get("layout") or "auto")


__all__ = ["Backend", "open_target", "pick_root", "reopen", "backend_class", "all_publish_options", "KINDS",
           "FILE_KINDS", "is_redis_target"]
