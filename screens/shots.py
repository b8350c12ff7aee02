"""SVG screenshots of the main screens on the demo fixture (``qconsole demo --screenshots DIR``)."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from typing import Any

from qconsole.demo import FIXED_NOW, build_fixture
from qconsole.scan import Root

#: (file name, keys pressed from the root screen)
SHOTS: list[tuple[str, list[str]]] = [
    ("root", []),
    ("queue", ["enter", "down", "space"]),
    ("peek", ["enter", "down", "down", "v"]),
    ("settings", ["s"]),
    ("publish", ["p"]),
    ("confirm", ["enter", "P"]),
    ("help", ["question_mark"]),
]


async def _settle(pilot: Any) -> None:
    # the first scan starts in the root screen's on_mount: wait until it has landed
    for _ in range(200):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        screens = pilot.app.screen_stack
        if all(getattr(s, "last_batch", True) is not None for s in screens) and not pilot.app.workers:
            break


async def _shoot(roots: list[str], keys: list[str], out: str, name: str, size: tuple[int, int]) -> str:
    from .app import QConsoleApp

    app = QConsoleApp([Root(r) for r in roots], interval=0, live_countdown=False,
                      clock=lambda: FIXED_NOW, timer=lambda: 0.004, audit_log=os.devnull)
    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        for key in keys:
            await pilot.press(key)
            await _settle(pilot)
        return app.save_screenshot(f"{name}.svg", path=out)


def make_screenshots(out: str, size: tuple[int, int] = (100, 30)) -> list[str]:
    """Write one SVG per main screen into ``out``; returns their paths."""
    os.makedirs(out, exist_ok=True)
    base = os.path.join(tempfile.gettempdir(), "qconsole-demo")
    shutil.rmtree(base, ignore_errors=True)
    try:
        roots = list(build_fixture(base))
        return [asyncio.run(_shoot(roots, keys, out, name, size)) for name, keys in SHOTS]
    finally:
        shutil.rmtree(base, ignore_errors=True)
