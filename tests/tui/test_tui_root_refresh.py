"""The root screen's pass over 2,000 idle queues redraws only what changed."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

pytest.importorskip("textual")

from qconsole.backends import open_target  # noqa: E402
from qconsole.screens import root_screen  # noqa: E402
from qconsole.screens.app import QConsoleApp  # noqa: E402
from qconsole.screens.root_screen import SPARK_WIDTH, RootScreen  # noqa: E402

NOW = 1_800_000_000.0


async def _settle(pilot: Any) -> None:
    for _ in range(200):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if pilot.app.screen.last_batch is not None and not pilot.app.workers:
            break


async def test_a_pass_over_unchanged_queues_builds_no_cells(tmp_path: Any, monkeypatch: Any) -> None:
    """Every pass built every cell of every row (Text objects, compared one by one) and looked
    each listed row up in a list of all rows: ~9 % of a core for 2,000 idle queues. A row is
    now rebuilt only when what it shows changed; the table still shows every change."""
    base = int((NOW - 60) * 1_000_000)
    for i in range(300):
        q = tmp_path / f"q{i:03d}"
        q.mkdir()
        (q / str(base + i)).write_bytes(b"{}")
    built: list[tuple] = []
    real = root_screen.row_cells
    monkeypatch.setattr(root_screen, "row_cells", lambda values: built.append(values) or real(values))
    app = QConsoleApp([open_target(str(tmp_path))], clock=lambda: NOW, audit_log=os.devnull, interval=0,
                      live_countdown=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await _settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        for _ in range(SPARK_WIDTH + 1):  # until the sparklines hold their width of samples
            screen.rescan()
            await _settle(pilot)
        built.clear()
        screen.rescan()
        await _settle(pilot)
        assert built == []
        table = screen.query_one("DataTable")
        assert table.get_row("0:q007")[1].plain == "1"
        (tmp_path / "q007" / str(base + 1000)).write_bytes(b"{}")  # a producer publishes
        time.sleep(0.01)
        screen.rescan()
        await _settle(pilot)
        assert [v[0] for v in built] == ["q007"]
        assert table.get_row("0:q007")[1].plain == "2"
        assert table.get_row("0:q008")[1].plain == "1"
