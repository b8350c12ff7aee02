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
    from . import monitor  # noqa: F401

    for optional in ("ops", "tui", "report_cmd"):
        try:
            __import__(f"{__name__}.{optional}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{optional}":
                raise


register_all()

__all__ = ["app", "main", "register_all"]
