"""Bug hunt B's findings on the forms, dialogs, root screen and exit status (4, 5, 11, 12, 14-18):
one Pilot test (or CLI test) each, written to fail before its fix."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

pytest.importorskip("textual")

from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402


def said(app: Any) -> str:
    return "\n".join(e.text for e in app.log_entries)


def burst(app: Any, *keys: str) -> None:
    """Keys as a paste or a fast typist sends them: all queued before the app handles the first
    (Pilot's press waits for the app between keys, which hid these bugs)."""
    from textual import events

    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


async def open_from_root(pilot: Any, key: str, kind: type) -> Any:
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, kind), pilot.app.screen
    return pilot.app.screen


# -- 4. the settings screen opens with its first field focused ---------------------------------

async def test_settings_open_with_the_first_field_focused(ddmq_root: tuple[str, Any]) -> None:
    from textual.widgets import Input

    from qconsole.screens.settings_screen import SettingsScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        assert isinstance(form.focused, Input) and form.focused.setting == ("root", "message_timeout")
        await pilot.press("end", "4", "2")  # did nothing: no field had the focus
        await settle(pilot)
        assert form.focused.value.endswith("42")
        assert "ctrl+s saves: 1 to set" in str(form.query_one("#serror").content)


# -- 5. keys typed in one burst after p / s / tab -----------------------------------------------

async def test_keys_typed_right_after_p_land_in_the_payload(ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens.publish_screen import PublishScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        burst(app, "p", *"hello")
        await settle(pilot)
        assert isinstance(app.screen, PublishScreen)
        assert app.screen.query_one("#payload").text == "hello"  # was "": the keys were lost


async def test_keys_typed_right_after_p_on_the_queue_screen_land_in_the_payload(ddmq_root: tuple[str, Any]) -> None:
    """The same burst from a queue screen (p and s were plain bindings there: keys went to the
    list and were lost); p typed in the search box stays text."""
    from qconsole.screens.publish_screen import PublishScreen
    from qconsole.screens.queue_screen import QueueScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "jobs")
        burst(app, "p", *"hello")
        await settle(pilot)
        assert isinstance(app.screen, PublishScreen)
        assert app.screen.query_one("#payload").text == "hello"
        await pilot.press("escape", "y")  # (the form asks before it drops the typed payload)
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        await pilot.press("slash", "p", "s")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen) and app.screen.query_one("#qsearch").value == "ps"


async def test_tab_in_a_burst_moves_the_focus_before_the_next_keys(ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens.publish_screen import PublishScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_from_root(pilot, "p", PublishScreen)
        burst(app, *"abc", "tab", "5")
        await settle(pilot)
        assert form.query_one("#payload").text == "abc"  # was "abc5"
        assert form.query_one("#count").value == "5"  # select_on_focus: the 1 replaced


async def test_settings_burst_keys_are_taken_or_said_and_tab_moves_first(ddmq_root: tuple[str, Any]) -> None:
    from textual.widgets import Input

    from qconsole.screens.settings_screen import SettingsScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        burst(app, "s", "4", "2")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, SettingsScreen)
        first = form.query_one("#root--message_timeout", Input)
        # typed before the fields were read: in the field the form then focuses, or said
        assert first.value.endswith("42") or "2 key(s) typed before the settings were read" in said(app), \
            (first.value, said(app))
        form.set_focus(first)
        await settle(pilot)
        burst(app, "end", "7", "tab", "8")
        await settle(pilot)
        assert first.value.endswith("7") and "8" not in first.value
        assert form.focused is form.query_one("#queue--message_timeout", Input)
        assert form.focused.value.endswith("8")


# -- 11. a planted ddmq.yaml of 1,500 keys ------------------------------------------------------

async def test_settings_stay_responsive_with_1500_planted_keys(ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens import settings_screen
    from qconsole.screens.settings_screen import SettingsScreen

    root, _broker = ddmq_root
    with open(os.path.join(root, "jobs", "ddmq.yaml"), "a") as fh:
        fh.write("".join(f"k{i}: {i}\n" for i in range(1500)))
    app = make_app([root])
    async with app.run_test(size=(120, 35)) as pilot:
        started = time.monotonic()
        # 150 keys took 7 s, 400 took 45 s (quadratic), 1,500 did not open within 4 minutes
        form = await asyncio.wait_for(open_from_root(pilot, "s", SettingsScreen), 60)
        while form.fields is None and time.monotonic() - started < 60:
            await pilot.pause(0.05)
        await settle(pilot)
        assert time.monotonic() - started < 30
        text = screen_text(app)
        assert f"{1500 - settings_screen.MAX_OTHER_KEYS} more key(s) in the files are not shown here" in text, text
        typed = time.monotonic()
        await pilot.press("end", "1")
        await settle(pilot)
        assert time.monotonic() - typed < 10
        assert "ctrl+s saves: 1 to set" in str(form.query_one("#serror").content)


# -- 12. the root screen updates only the cells that changed --------------------------------------

async def test_an_unchanged_pass_updates_no_cell(vsqs_root: tuple[str, Any]) -> None:
    from textual.widgets import DataTable

    root, manager = vsqs_root
    for i in range(20):
        manager.get_queue(f"q{i:02d}")
    manager.get_queue("q00").publish(b"x")
    app = make_app([root])
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one(DataTable)
        updated: list[tuple[str, str]] = []
        real = table.update_cell

        def counting(row: Any, col: Any, value: Any, **kw: Any) -> None:
            updated.append((str(row), str(col)))
            real(row, col, value, **kw)

        table.update_cell = counting  # type: ignore[method-assign]
        screen.rescan()
        await settle(pilot)
        # (the backlog sparkline grows by a point a pass until it is full)
        assert {col for _row, col in updated} <= {"backlog"}, updated  # was all 10 cells of every row
        updated.clear()
        manager.get_queue("q01").publish(b"y")
        screen.rescan()
        await settle(pilot)
        changed = {row for row, col in updated if col != "backlog"}
        assert changed == {"0:q01"}, updated
        assert "q01" in screen_text(app)


# -- 14. the publish form scrolls on a short terminal ---------------------------------------------

async def test_the_focused_publish_field_is_visible_at_40x12(ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens.publish_screen import PublishScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(40, 12)) as pilot:
        form = await open_from_root(pilot, "p", PublishScreen)
        for _ in range(3):
            await pilot.press("tab")
        await pilot.press(*"abc")
        await settle(pilot)
        focused = form.focused
        assert focused is not None and focused.id not in ("payload", "count")
        assert "abc" in screen_text(app), screen_text(app)  # typed into a field below the screen


# -- 15. confirmation dialogs ------------------------------------------------------------------

async def test_a_dialog_shows_the_list_behind_it_and_its_keys(ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens.dialogs import ConfirmScreen

    root, broker = ddmq_root
    broker.publish("jobs", "hello-behind")
    app = make_app([root])
    async with app.run_test(size=(120, 35)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        text = screen_text(app)
        assert "hello-behind" in text, text  # the row it is about (the screen was blanked)
        assert "No (n)" in text and "Yes (y)" in text


async def test_yes_and_no_fit_at_40x12_and_no_stays_the_default(ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens.dialogs import ConfirmScreen

    root, broker = ddmq_root
    broker.publish("jobs", "keep me")
    app = make_app([root])
    async with app.run_test(size=(40, 12)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        text = screen_text(app)
        assert "No (n)" in text and "Yes (y)" in text, text  # the buttons were cut off
        await pilot.press("enter")  # the focused button: No
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    assert sum(".ddmq" in n for n in os.listdir(os.path.join(root, "jobs"))) == 1


# -- 16. settings: an invalid field is invalid in the effective column ----------------------------

async def test_an_invalid_ddmq_field_shows_invalid_not_default(ddmq_root: tuple[str, Any]) -> None:
    from textual.widgets import Input

    from qconsole.screens.settings_screen import SettingsScreen

    root, _broker = ddmq_root
    with open(os.path.join(root, "jobs", "ddmq.yaml"), "a") as fh:
        fh.write("priority: 5\n")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        box = form.query_one("#queue--priority", Input)
        assert "5 (queue)" in str(form.query_one("#eff--priority").content)
        form.set_focus(box)
        await pilot.press("ctrl+a", "ctrl+k", "-", "5")
        await settle(pilot)
        shown = str(form.query_one("#eff--priority").content)
        assert "invalid (queue)" in shown and "default" not in shown, shown  # was "999 (default)"


async def test_an_invalid_rsmq_field_shows_invalid_and_rsmq_has_no_default() -> None:
    from redis_peer import shared_server
    from textual.widgets import Input

    from qconsole.screens.settings_screen import SettingsScreen

    server = shared_server()
    try:
        from rsmq import RedisSMQ
    except ImportError:
        pytest.skip("PyRSMQ is not installed (the test extra pins PyRSMQ==0.6.1)")
    ns = "huntb" + os.urandom(5).hex()
    RedisSMQ(host="127.0.0.1", port=server.port, ns=ns).createQueue(qname="jobs", vt=8).execute()
    app = make_app([server.url(ns)])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        box = form.query_one("#queue--vt", Input)
        form.set_focus(box)
        for typed in ("0.5", "1e3"):
            await pilot.press("ctrl+a", "ctrl+k", *typed)
            await settle(pilot)
            shown = str(form.query_one("#eff--vt").content)
            assert "invalid (queue)" in shown, shown  # was " (default)": an empty value, and no default
        assert "(default)" not in screen_text(app)


# -- 17. several roots: every root's error is shown -------------------------------------------------

async def test_root_level_errors_of_several_roots_are_all_shown(tmp_path: Any) -> None:
    roots = []
    for name in ("a", "b"):
        real = tmp_path / f"real{name}"
        real.mkdir()
        root = tmp_path / name
        (root / f"q{name}").mkdir(parents=True)
        os.symlink(real, root / f"link{name}")
        roots.append(str(root))
    app = make_app(roots)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        notes = str(app.screen.query_one("#rnotes").content)
        assert "linka: symlink not followed" in notes, notes
        assert "linkb: symlink not followed" in notes, notes  # only the first root's was shown


# -- 18. a crash exits non-zero -----------------------------------------------------------------

def test_a_crash_in_the_console_exits_non_zero_with_one_line(tmp_path: Any, monkeypatch: Any) -> None:
    from textual.app import App
    from typer.testing import CliRunner

    from qconsole.cli import app as cli
    from qconsole.errors import ExitCode
    from qconsole.screens.app import QConsoleApp
    from qconsole.screens.root_screen import RootScreen

    (tmp_path / "jobs").mkdir()

    def crash(self: Any) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(RootScreen, "on_mount", crash)
    monkeypatch.setattr(QConsoleApp, "run", lambda self, **kw: App.run(self, headless=True, size=(80, 24)))
    result = CliRunner().invoke(cli, ["open", str(tmp_path), "--layout", "vsqs"])
    assert result.exit_code == ExitCode.INTERNAL, (result.exit_code, result.output)  # was 0
    assert "qconsole: the console stopped on an internal error (RuntimeError: boom second line)" in result.output
