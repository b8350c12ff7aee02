"""Actions on marked messages of a live queue: a message consumed meanwhile is skipped, not
a failure; a move of messages a consumer holds asks first, as a requeue does."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("textual")

from qconsole.demo import FIXED_NOW  # noqa: E402
from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402


def vsqs_root(tmp_path: Any, ready: int, held: int = 0) -> str:
    """A VSQS root: queue ``q`` (``ready`` ready, ``held`` in flight past FIXED_NOW) and ``dest``."""
    root = str(tmp_path / "v")
    for q in ("q", "dest"):
        os.makedirs(os.path.join(root, q))
    for i in range(ready + held):
        mid = int((FIXED_NOW - 5000 + i) * 1_000_000)
        name = f"{mid}.{int((FIXED_NOW + 600) * 1_000_000)}" if i >= ready else str(mid)
        with open(os.path.join(root, "q", name), "w") as fh:
            fh.write(f"message {i}")
    return root


def the_list(screen: Any) -> Any:
    from qconsole.screens.message_list import MessageList

    return screen.query_one(MessageList)


@pytest.mark.parametrize("keys", [("d", "y"), ("r",)])
async def test_a_marked_message_consumed_meanwhile_is_skipped_and_the_rest_done(tmp_path: Any,
                                                                                 keys: tuple[str, ...]) -> None:
    root = vsqs_root(tmp_path, ready=0, held=4) if keys == ("r",) else vsqs_root(tmp_path, ready=4)
    qdir = os.path.join(root, "q")
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await open_queue(pilot, "q")
        await pilot.press("a")  # every row marked
        await settle(pilot)
        gone = the_list(screen).messages[0]
        os.unlink(os.path.join(qdir, gone.name))  # a consumer acked it behind the console's back
        await pilot.press(*keys)
        if keys == ("r",):
            await settle(pilot)
            assert "still in flight" in screen_text(app)
            await pilot.press("y")
        await settle(pilot)
        said = " ".join(e.text for e in app.log_entries)
        assert "3 done, 1 skipped (1 not in the queue any more)" in said, said
        left = os.listdir(qdir)
        if keys == ("r",):  # the three others are ready again
            assert sorted(left) == sorted(n.partition(".")[0] for n in left) and len(left) == 3
        else:
            assert left == []
        assert not the_list(screen).marked


async def test_a_change_that_failed_keeps_the_marks(tmp_path: Any, monkeypatch: Any) -> None:
    root = vsqs_root(tmp_path, ready=3)
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await open_queue(pilot, "q")
        await pilot.press("space", "space")
        await settle(pilot)
        marked = set(the_list(screen).marked)
        assert len(marked) == 2

        def failing(*_a: Any, **_k: Any) -> Any:
            raise OSError(5, "Input/output error")  # the disk, or the network mount, failing

        monkeypatch.setattr(app.roots[0], "remove", failing)
        await pilot.press("d", "y")
        await settle(pilot)
        assert any(e.text.startswith("delete:") and e.severity == "error" for e in app.log_entries)
        assert set(the_list(screen).marked) == marked  # the operator may try again
        assert len(os.listdir(os.path.join(root, "q"))) == 3


async def test_moving_messages_in_flight_asks_first(tmp_path: Any) -> None:
    root = vsqs_root(tmp_path, ready=1, held=2)
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        await open_queue(pilot, "q")
        await pilot.press("f", "m")  # every in-flight message marked, then move
        await settle(pilot)
        text = screen_text(app)
        assert "Move 2 message(s)? 2 still in flight" in text and "processed twice" in text
        await pilot.press("n")
        await settle(pilot)
        assert "Move 2 message(s) to" not in screen_text(app)
        await pilot.press("m")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert "Move 2 message(s) to" in screen_text(app)  # then the destination is asked
        await pilot.press("enter")
        await settle(pilot)
        assert len(os.listdir(os.path.join(root, "dest"))) == 2
        assert len(os.listdir(os.path.join(root, "q"))) == 1


def burst(app: Any, keys: str) -> None:
    """Keys arriving together (a paste, or an SSH connection delivering buffered keys): all
    queued before the first is handled, as a terminal sends them."""
    from textual import events

    for ch in keys:
        ev = events.Key("slash" if ch == "/" else ch, ch)
        ev.set_sender(app)
        app._driver.send_message(ev)


async def test_keys_typed_in_one_burst_after_slash_go_into_its_box(tmp_path: Any) -> None:
    """The rest of the burst was handled as list commands before the box had the focus (e: mark
    expired, a: mark all, t: the trash, R: requeue every expired); a / inside the text is text."""
    import asyncio

    from textual.widgets import Input

    root = vsqs_root(tmp_path, ready=2)
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        await settle(pilot)
        burst(app, "/q/")
        await asyncio.sleep(0.3)
        await settle(pilot)
        assert app.screen.query_one("#filter", Input).value == "q/"
        await pilot.press("escape")
        screen = await open_queue(pilot, "q")
        burst(app, "/eat/")
        await asyncio.sleep(0.3)
        await settle(pilot)
        assert screen.query_one("#qsearch", Input).value == "eat/"
        assert app.screen is screen and not the_list(screen).marked


async def test_with_several_roots_the_in_flight_question_names_the_queue_and_its_root(tmp_path: Any) -> None:
    """'Move 2 message(s)? 2 still in flight' did not say which root's queue, where every other
    delete, purge or move question names it (TUI hunt D)."""
    from qconsole.screens.dialogs import ConfirmScreen

    root = vsqs_root(tmp_path, ready=1, held=2)
    other = str(tmp_path / "other")
    os.makedirs(os.path.join(other, "elsewhere"))
    app = make_app([root, other])
    async with app.run_test(size=(160, 40)) as pilot:
        await open_queue(pilot, "q")
        await pilot.press("f", "m")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.question == f"Move 2 message(s) of q (root {root})? 2 still in flight"
        await pilot.press("n")
        await settle(pilot)


async def test_a_purge_stopped_at_a_safe_point_says_how_far_it_got_and_u_undoes_that_part(tmp_path: Any) -> None:
    """ctrl+q, ctrl+q, y stops a change at its next progress tick. It said 'purge: stopped at a
    safe point (what was done stays done)': not how many went, nor the trash batch holding them,
    and u could not undo them; the shell, once the console closed, heard nothing (TUI hunt D)."""
    from qconsole.screens.dialogs import ConfirmScreen

    root = vsqs_root(tmp_path, ready=3000)
    app = make_app([root])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        backend = app.roots[0]
        real_tick = backend.tick

        def tick(done: int, total: int) -> None:
            if done >= 1000:
                app.stop_changes.set()  # what answering yes to "Stop purge at a safe point?" does
            real_tick(done, total)

        backend.tick = tick
        app.run_operation(backend, "purge", lambda ops: ops.purge("q"))
        for _ in range(500):
            await pilot.pause(0.02)
            if not app.changing:
                break
        await settle(pilot)
        left = len(os.listdir(os.path.join(root, "q")))
        assert 0 < left < 3000
        (line,) = app.exit_lines
        assert line.startswith(f"purge q: {3000 - left} done; trash batch ") and line.endswith("; stopped at a safe point")
        assert line in [e.text for e in app.log_entries]
        app.stop_changes.clear()
        backend.tick = real_tick
        await pilot.press("u")  # (it asks first)
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and "restore the last change of q" in app.screen.question
        await pilot.press("y")
        for _ in range(500):
            await pilot.pause(0.02)
            if not app.changing and len(os.listdir(os.path.join(root, "q"))) == 3000:
                break
        assert len(os.listdir(os.path.join(root, "q"))) == 3000


def test_the_shell_hears_how_far_a_stopped_change_got_once_the_console_closed(capsys: Any) -> None:
    """Quitting stopped a running change at a safe point and exited 0 with nothing said: the
    lines the console kept for the shell are written to stderr once it has closed."""
    from qconsole.cli.tui import run_console

    class Closed:
        return_code = 0
        _exception = None
        exit_lines = ["publish q: 256 done; stopped at a safe point"]

        def run(self) -> None:
            pass

    run_console(Closed())
    assert capsys.readouterr().err == "qconsole: publish q: 256 done; stopped at a safe point\n"
