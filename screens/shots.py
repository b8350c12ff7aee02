"""SVG screenshots of the main screens on the demo fixture (``qconsole demo --screenshots DIR``)."""

from __future__ import annotations

import asyncio
import contextlib
import html
import itertools
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from qconsole.demo import FIXED_NOW, build_fixture
from qconsole.backends import open_target as Root

#: (file name, keys pressed from the root screen); the root shot rescans a few times so the
#: backlog sparkline shows a history rather than one sample
SHOTS: list[tuple[str, list[str]]] = [
    ("root", ["g"] * 7),
    ("queue", ["enter", "down", "space"]),
    ("queue-vsqs", ["down", "down", "enter", "end"]),
    ("search", ["down", "down", "enter", "slash", *"held", "enter"]),
    ("peek", ["enter", "down", "down", "v"]),
    ("settings", ["s"]),
    ("publish", ["p"]),
    ("confirm", ["enter", "P"]),
    ("trash", ["down", "down", "down", "enter", "d", "y", "t"]),
    ("help", ["question_mark"]),
]
#: shots taken again with the 16-colour palette (file name gets "-16")
SIXTEEN = ("root", "queue")


def _idle(app: Any) -> bool:
    """No worker running, every screen past its first scan, no list waiting to ask for details."""
    if app.workers:
        return False
    if not all(getattr(s, "last_batch", True) is not None for s in app.screen_stack):
        return False
    from .message_list import MessageList

    return not any(lst._ask_pending for lst in app.screen.query(MessageList))  # noqa: SLF001


async def settle(pilot: Any) -> None:
    # the first scan starts in the root screen's on_mount: wait until it has landed; the lazy
    # payload details are asked for after a repaint, so idle must hold twice in a row
    calm = 0
    for _ in range(200):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        calm = calm + 1 if _idle(pilot.app) else 0
        if calm >= 2:
            break


#: the fixture's directory as the pictures show it
SHOWN_BASE = "/tmp/qconsole-demo"


async def _shoot(roots: list[str], keys: list[str], out: str, name: str, size: tuple[int, int],
                 colors: int = 256) -> str:
    from qconsole.output.nagios import Thresholds

    from .app import QConsoleApp

    # the timer advances 4 ms per reading, so every scan reports "in 4 ms" (stable, not "0 ms")
    steps = itertools.count()
    app = QConsoleApp([Root(r) for r in roots], interval=0, live_countdown=False,
                      clock=lambda: FIXED_NOW, timer=lambda: next(steps) * 0.004, audit_log=os.devnull,
                      thresholds=Thresholds(warn_ready=10, crit_ready=50, warn_expired=1), colors=colors)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        path = os.path.join(out, f"{name}{'-16' if colors <= 16 else ''}.svg")
        base = os.path.dirname(roots[0])
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(stable_ids(portable_svg(app.export_screenshot()).replace(base, SHOWN_BASE)))
        return path


def stable_ids(svg: str) -> str:
    """Textual names the SVG's styles after a hash of what it drew, temp path included: name them
    after the picture as saved, so regenerating an unchanged screen changes no byte."""
    import zlib

    ids = re.compile(r"\bterminal-\d+")
    digest = zlib.adler32(ids.sub("terminal", svg).encode())
    return ids.sub(f"terminal-{digest}", svg)


_TEXT = re.compile(r'(<text [^>]*?x=")([0-9.]+)(" [^>]*?textLength=")([0-9.]+)("[^>]*>)((?:&#160;)+)([^<]*)(</text>)')


def portable_svg(svg: str) -> str:
    """Move each text run's leading no-break spaces into its x offset.

    Textual starts a run at every style change, often with the separating spaces; some SVG
    renderers (librsvg, so image viewers and converters) drop leading spaces, which draws
    the run one or more cells left and glues it to the previous word. Browsers are unaffected.
    """

    def fix(m: re.Match[str]) -> str:
        pad = m[6].count("&#160;")
        rest = m[7]
        cells = pad + len(html.unescape(rest))
        if not rest or cells == 0:
            return m[0]
        cell = float(m[4]) / cells
        x = float(m[2]) + pad * cell
        length = float(m[4]) - pad * cell
        return f"{m[1]}{x:g}{m[3]}{length:g}{m[5]}{rest}{m[8]}"

    return _TEXT.sub(fix, svg)


def make_screenshots(out: str, size: tuple[int, int] = (100, 30)) -> list[str]:
    """Write one SVG per main screen into ``out``; returns their paths."""
    os.makedirs(out, exist_ok=True)
    # a directory of this run's own (never one another run is rebuilding), as long as the one shown
    base = tempfile.mkdtemp(prefix="qcdem", dir="/tmp")
    assert len(base) == len(SHOWN_BASE)
    paths = []
    try:
        for name, keys in SHOTS:
            for colors in (256, 16) if name in SIXTEEN else (256,):
                # a fresh fixture per shot: a shot that deletes leaves the next one untouched
                shutil.rmtree(base, ignore_errors=True)
                roots = list(build_fixture(base))
                with _fixed_trash():
                    paths.append(asyncio.run(_shoot(roots, keys, out, name, size, colors)))
        return paths
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def _fixed_trash() -> Iterator[None]:
    """Trash batches named and dated at the fixture's instant (pictures that do not change)."""
    import types

    from qconsole.backends.fs import trash

    saved = trash.time, trash.secrets
    trash.time = types.SimpleNamespace(time=lambda: FIXED_NOW, strftime=time.strftime, gmtime=time.gmtime)  # type: ignore[assignment]
    trash.secrets = types.SimpleNamespace(token_hex=lambda n: "5eed00"[: 2 * n])  # type: ignore[assignment]
    try:
        yield
    finally:
        trash.time, trash.secrets = saved
