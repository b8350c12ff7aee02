"""Layer 5: the typer CLI. Each noun lives in its own module; heavy imports stay inside commands."""

from __future__ import annotations

from .app import app, main

_registered = False


def register_all() -> None:
    """Import the command modules (each registers its commands on ``app``)."""
    global _registered
    if _registered:
        return
    _registered = True
    # each module registers its commands on `app`; none imports Textual or PySpark at import
    from . import monitor, ops, report_cmd, tui  # noqa: F401


register_all()

__all__ = ["app", "main", "register_all"]
