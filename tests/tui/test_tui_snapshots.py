"""SVG snapshots (pytest-textual-snapshot) of every screen in its main states, at 80×24, on a fixed
fixture with a frozen clock, in 256 colours and (the main ones) in a 16-colour terminal's palette.

Regenerate after a deliberate UI change: pytest tests/test_tui_snapshots.py --snapshot-update
and look at the pictures (tests/__snapshots__/; rsvg-convert renders them to PNG).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("pytest_textual_snapshot")

from qconsole.backends import open_target  # noqa: E402
from qconsole.demo import FIXED_NOW, build_fixture  # noqa: E402
from qconsole.screens.shots import settle  # noqa: E402  (the same wait the screenshot script uses)
from tui_helpers import refuse_reading  # noqa: E402

#: the path the pictures show (the header names the roots) ...
SHOWN_BASE = "/tmp/qconsole-tui-snapshots"
#: ... and the one this process uses: as long, so every line breaks at the same place, and its
#: own, so concurrent runs (other worktrees, other sessions) never rebuild it under this one
BASE = tempfile.mkdtemp(prefix="qconsole-tui-s", dir="/tmp")
assert len(BASE) == len(SHOWN_BASE)
atexit.register(shutil.rmtree, BASE, True)
SIZE = (80, 24)

Steps = Callable[[Any], Awaitable[None]]


def long_queue(vroot: str, n: int = 60) -> None:
    """A VSQS queue longer than the screen: 55 ready, 5 in flight, fixed ids and payloads."""
    qdir = os.path.join(vroot, "backlog")
    os.makedirs(qdir, exist_ok=True)
    for i in range(n):
        mid = int((FIXED_NOW - 7200 + i * 13) * 1_000_000)
        name = f"{mid}.{int((FIXED_NOW + 20 + i) * 1_000_000)}" if i >= n - 5 else str(mid)
        with open(os.path.join(qdir, name), "w") as fh:
            fh.write(f'{{"job": {i}, "kind": "resize"}}')


def make(colors: int | None = None, read_only: bool = False, **kw: Any) -> Any:
    from qconsole.output.nagios import Thresholds
    from qconsole.screens.app import QConsoleApp

    shutil.rmtree(BASE, ignore_errors=True)
    droot, vroot = build_fixture(BASE)
    long_queue(vroot)
    kw.setdefault("thresholds", Thresholds(warn_ready=10, crit_ready=50, warn_expired=1))
    app = QConsoleApp([open_target(droot), open_target(vroot)], interval=0, live_countdown=False,
                      clock=lambda: FIXED_NOW, timer=lambda: 0.0, audit_log=os.devnull, read_only=read_only,
                      colors=colors, **kw)
    export = app.export_screenshot

    def shown(*args: Any, **kwargs: Any) -> str:
        return export(*args, **kwargs).replace(BASE, SHOWN_BASE)

    app.export_screenshot = shown  # type: ignore[method-assign]
    return app


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import types

    from qconsole.backends.fs import trash

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    # trash batches are named and dated by the real clock and a random suffix: fix both
    fixed_time = types.SimpleNamespace(time=lambda: FIXED_NOW, strftime=time.strftime, gmtime=time.gmtime)
    monkeypatch.setattr(trash, "time", fixed_time)
    monkeypatch.setattr(trash, "secrets", types.SimpleNamespace(token_hex=lambda n: "5eed00"[: 2 * n]))
    yield
    shutil.rmtree(BASE, ignore_errors=True)
    monkeypatch.delenv("TZ")
    time.tzset()


def no_blink(app: Any) -> None:
    """Cursors drawn steadily: a blinking one is on or off depending on when the picture is taken."""
    from textual.widgets import Input, TextArea

    for widget in app.screen.query("Input, TextArea"):
        if isinstance(widget, (Input, TextArea)):
            widget.cursor_blink = False


def keys(*pressed: str) -> Steps:
    async def go(pilot: Any) -> None:
        await settle(pilot)
        for k in pressed:
            await pilot.press(k)
            await settle(pilot)
        no_blink(pilot.app)
        await pilot.pause()

    return go


def to_queue(name: str, *then: str) -> Steps:
    """From the root screen onto queue ``name`` (rows are sorted by name), then ``then``."""
    order = ["emails", "ingest", "orders", "reports", "thumbnails", "backlog", "webhooks"]
    order = sorted(order)
    return keys(*(["down"] * order.index(name)), "enter", *then)


#: (name, steps, app options); every one is taken in 256 colours, those in SIXTEEN also in 16
CASES: dict[str, tuple[Steps, dict[str, Any]]] = {
    "root": (keys(), {}),
    "root_sorted_by_backlog": (keys("o"), {}),
    "root_read_only": (keys(), {"read_only": True}),
    "root_filter": (keys("slash", "o", "r"), {}),
    "queue_ddmq_marked": (to_queue("emails", "down", "space", "end"), {}),
    "queue_long_end": (to_queue("backlog", "end"), {}),
    "queue_long_middle": (to_queue("backlog", "pagedown", "space", "shift+down", "shift+down"), {}),
    "queue_empty": (to_queue("thumbnails"), {}),
    "queue_read_only": (to_queue("orders"), {"read_only": True}),
    "queue_search": (to_queue("orders", "slash", "h", "e", "l", "d", "enter"), {}),
    "queue_search_box": (to_queue("orders", "slash", "1", "0", "0"), {}),
    "queue_dead_letters": (to_queue("emails", "D"), {"poison_threshold": 1}),
    "peek_json": (to_queue("emails", "v"), {}),
    "peek_text": (to_queue("orders", "end", "v"), {}),
    "peek_hex": (to_queue("ingest", "v"), {}),
    "peek_markup_and_escapes": (to_queue("emails", *["down"] * 6, "v"), {}),
    "peek_wide": (to_queue("emails", "v", "w"), {}),
    "settings_ddmq": (to_queue("emails", "s"), {}),
    "publish_ddmq": (to_queue("reports", "p"), {}),
    "publish_vsqs": (to_queue("orders", "p"), {}),
    "publish_invalid": (to_queue("reports", "p", "tab", "x"), {}),
    "peek_save_dialog": (to_queue("orders", "v", "s"), {}),
    "confirm_delete": (to_queue("orders", "space", "space", "d"), {}),
    "confirm_purge_typed": (to_queue("reports", "P"), {}),
    "confirm_requeue_in_flight": (to_queue("orders", "end", "up", "r"), {}),
    "move_picker": (to_queue("reports", "m"), {}),
    "help": (keys("question_mark"), {}),
    "help_read_only": (keys("question_mark"), {"read_only": True}),
    "trash_empty": (to_queue("emails", "t"), {}),
    "trash_after_delete": (to_queue("reports", "d", "y", "t"), {}),
    "log": (keys("o", "o", "L"), {}),
}
SIXTEEN = ["root", "queue_ddmq_marked", "queue_long_end", "queue_read_only", "peek_json", "peek_hex",
           "settings_ddmq", "publish_ddmq", "confirm_purge_typed", "confirm_requeue_in_flight", "help",
           "trash_after_delete", "queue_dead_letters"]


@pytest.mark.parametrize("name", list(CASES))
def test_screen_256_colours(snap_compare: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")  # the save dialog names the working directory: the same wherever tests run
    steps, options = CASES[name]
    assert snap_compare(make(colors=256, **options), terminal_size=SIZE, run_before=steps)


@pytest.mark.parametrize("name", SIXTEEN)
def test_screen_16_colours(snap_compare: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    steps, options = CASES[name]
    assert snap_compare(make(colors=16, **options), terminal_size=SIZE, run_before=steps)


def test_root_with_a_scan_error(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make(colors=256)
    refuse_reading(monkeypatch, "ingest")  # what a chmod 000 directory does (tests may run as root)
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("down"))


def test_queue_that_vanished(snap_compare: Any) -> None:
    app = make(colors=256)

    async def go(pilot: Any) -> None:
        await settle(pilot)
        shutil.rmtree(os.path.join(BASE, "vsqs", "webhooks"))  # removed under the operator
        await pilot.press("end", "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=go)
