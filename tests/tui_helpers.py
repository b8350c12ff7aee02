"""Shared helpers of the TUI tests: a frozen clock, the app on fixture roots, waiting for workers,
and what the screen shows as plain text (or through a 16-colour terminal)."""

from __future__ import annotations

import io
import os
import re
from typing import Any

from rich.console import Console

from qconsole.backends import open_target
from qconsole.demo import FIXED_NOW


class Clock:
    def __init__(self, now: float = FIXED_NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_app(paths: list[str], clock: Clock | None = None, **kw: Any) -> Any:
    from qconsole.screens.app import QConsoleApp

    kw.setdefault("interval", 0)
    kw.setdefault("live_countdown", False)
    kw.setdefault("audit_log", os.devnull)
    return QConsoleApp([open_target(p) for p in paths], clock=clock or Clock(), **kw)


async def settle(pilot: Any) -> None:
    from qconsole.screens.shots import settle as settle_app

    await settle_app(pilot)


async def open_queue(pilot: Any, name: str) -> Any:
    from qconsole.screens.queue_screen import QueueScreen
    from qconsole.screens.root_screen import RootScreen

    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RootScreen)
    table = screen.query_one("DataTable")
    table.move_cursor(row=table.get_row_index([k for k in screen.scans if k.endswith(":" + name)][0]))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, QueueScreen)
    return pilot.app.screen


def _update(app: Any) -> Any:
    return app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)


def screen_text(app: Any) -> str:
    """The whole screen as plain text, one line per terminal row."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      record=True, legacy_windows=False)
    console.print(_update(app))
    return console.export_text(styles=False)


def screen_ansi(app: Any, color_system: str = "standard") -> str:
    """The screen as a terminal with ``color_system`` colours would receive it (escape codes)."""
    from rich.color import ColorSystem
    from textual.strip import Strip

    system = {"standard": ColorSystem.STANDARD, "256": ColorSystem.EIGHT_BIT}.get(color_system, ColorSystem.TRUECOLOR)
    out = []
    for line in _update(app).strips:
        for strip in line:
            for text, style, _ in strip:
                out.append(text if style is None else f"\x1b[{Strip.render_ansi(style, system)}m{text}\x1b[0m")
        out.append("\n")
    return "".join(out)


SGR = re.compile(r"\x1b\[([0-9;]*)m([^\x1b]*)")


def sgr_of(ansi: str, text: str) -> list[str]:
    """The SGR parameters in force where ``text`` is written (every occurrence)."""
    out = []
    for m in SGR.finditer(ansi):
        if text in m[2]:
            out.append(m[1])
    return out


def refuse_reading(monkeypatch: Any, name: str) -> None:
    """What a chmod 000 directory ``name`` does to its listings (the tests may run as root, for
    whom the kernel ignores the bits): opening it to list it, or listing it by path, is refused."""
    real_scandir, real_open = os.scandir, os.open

    def refused(path: Any) -> bool:
        return isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).rstrip("/").endswith(name)

    def scandir(path: Any = ".") -> Any:
        if refused(path):
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    def open_(path: Any, *args: Any, **kwargs: Any) -> int:
        if refused(path) and kwargs.get("dir_fd") is None:
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "open", open_)
