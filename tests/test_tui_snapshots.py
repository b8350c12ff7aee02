"""SVG snapshots (pytest-textual-snapshot) of the main screens on a fixed fixture with a frozen clock.

Regenerate after a deliberate UI change: pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pytest_textual_snapshot")

from qconsole.demo import FIXED_NOW, build_fixture  # noqa: E402
from qconsole.backends import open_target as Root  # noqa: E402
from screens.shots import settle  # noqa: E402  (the same wait the screenshot script uses)

#: a fixed path, because the header shows the root
BASE = "/tmp/qconsole-tui-snapshots"


@pytest.fixture
def snap_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    shutil.rmtree(BASE, ignore_errors=True)
    droot, vroot = build_fixture(BASE)
    from screens.app import QConsoleApp

    yield QConsoleApp([Root(droot), Root(vroot)], interval=0, live_countdown=False,
                      clock=lambda: FIXED_NOW, timer=lambda: 0.0, audit_log=os.devnull)
    shutil.rmtree(BASE, ignore_errors=True)
    monkeypatch.delenv("TZ")
    time.tzset()



def test_root_screen(snap_compare: Any, snap_app: Any) -> None:
    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=settle)


def test_queue_screen(snap_compare: Any, snap_app: Any) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("down", "space", "end")

    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=go)


def test_peek_screen(snap_compare: Any, snap_app: Any) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("down", "down", "v")
        await settle(pilot)

    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=go)


def test_settings_screen(snap_compare: Any, snap_app: Any) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)

    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=go)


def test_publish_screen(snap_compare: Any, snap_app: Any) -> None:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)

    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=go)
