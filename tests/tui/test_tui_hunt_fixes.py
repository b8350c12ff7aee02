"""The tmux bug hunt's findings in the console: one Pilot test each, written to fail before its
fix. Queues and messages are made by the real clients (vsqs 0.3, ddmq 0.9.14)."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("textual")

from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402

MIB = 1 << 20


def said(app: Any) -> str:
    return "\n".join(e.text for e in app.log_entries)


async def save_from_peek(pilot: Any, path: str) -> None:
    """``s`` in peek, the file name typed over the default, enter; the save's worker awaited."""
    from qconsole.screens.dialogs import AskTextScreen

    await pilot.press("v")
    await settle(pilot)
    await pilot.press("s")
    await settle(pilot)
    assert isinstance(pilot.app.screen, AskTextScreen)
    pilot.app.screen.query_one("#ask").value = path
    await pilot.press("enter")
    await settle(pilot)


# -- 1. s in peek saves the whole payload, or nothing -------------------------------------------

async def test_s_saves_the_whole_of_a_20_mib_payload(vsqs_root: tuple[str, Any], tmp_path: Any) -> None:
    root, manager = vsqs_root
    body = os.urandom(20 * MIB)
    manager.get_queue("jobs").publish(body)
    out = str(tmp_path / "saved.payload")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "jobs")
        await save_from_peek(pilot, out)
        assert f"saved 20.0 MiB to {out}" in said(app), said(app)
    with open(out, "rb") as fh:
        assert fh.read() == body  # was its first 16 MiB, reported as saved


async def test_s_takes_a_tilde_and_says_where_it_saved(vsqs_root: tuple[str, Any], tmp_path: Any,
                                                      monkeypatch: Any) -> None:
    """`~/x` was taken as a directory named ~ under wherever the console was started."""
    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"tilde")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "jobs")
        await save_from_peek(pilot, "~/mine.payload")
        assert f"saved 5 B to {home / 'mine.payload'}" in said(app), said(app)
    assert (home / "mine.payload").read_bytes() == b"tilde"


async def test_s_refuses_a_ddmq_message_too_large_to_parse(ddmq_root: tuple[str, Any], tmp_path: Any) -> None:
    root, broker = ddmq_root
    broker.publish("jobs", "x" * (17 * MIB))
    out = str(tmp_path / "saved.payload")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "jobs")
        await save_from_peek(pilot, out)
        text = said(app)
        assert "saved 16" not in text and "not saved:" in text, text
        assert "too large to parse (17.0 MiB, 16.0 MiB read): its payload cannot be saved whole" in text, text
    assert not os.path.exists(out)  # was the raw file's first 16 MiB, reported as the payload



async def open_form(pilot: Any, queue: str, key: str, kind: type) -> Any:
    """The form ``key`` opens over ``queue``'s screen (opened from the root screen), a ``kind``."""
    await open_queue(pilot, queue)
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, kind)
    return pilot.app.screen


async def publish_form(pilot: Any, queue: str = "jobs") -> Any:
    from qconsole.screens.publish_screen import PublishScreen

    return await open_form(pilot, queue, "p", PublishScreen)


async def test_escape_from_a_publish_form_with_a_typed_payload_asks(ddmq_root: tuple[str, Any]) -> None:
    """Escape dropped a typed message without a word (settings asked; ctrl+q asks)."""
    from textual.widgets import TextArea

    from qconsole.screens.dialogs import ConfirmScreen
    from qconsole.screens.publish_screen import PublishScreen

    root, broker = ddmq_root
    broker.publish("jobs", "hello")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await publish_form(pilot)
        form.query_one("#payload", TextArea).text = "a long message typed by hand"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and "Close without publishing?" in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert app.screen is form and form.query_one("#payload", TextArea).text == "a long message typed by hand"
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert not isinstance(app.screen, (PublishScreen, ConfirmScreen))
        await pilot.press("p")  # an untouched form closes at once
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, (PublishScreen, ConfirmScreen))


# -- 2. typed input never ends the console ------------------------------------------------------

async def test_a_doubled_minus_in_the_publish_priority_is_a_problem_shown(ddmq_root: tuple[str, Any]) -> None:
    root, broker = ddmq_root
    broker.publish("jobs", "hello")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await publish_form(pilot)
        form.query_one("#priority").focus()
        await pilot.press(*"--5")  # int("--5") raised out of the form: the console died
        await settle(pilot)
        assert app.is_running and app.screen is form
        assert "priority: expected an integer" in screen_text(app)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is form  # nothing published
        assert sum(".ddmq" in n for n in os.listdir(os.path.join(root, "jobs"))) == 1


async def open_settings(pilot: Any, queue: str) -> Any:
    from qconsole.screens.settings_screen import SettingsScreen

    return await open_form(pilot, queue, "s", SettingsScreen)


async def test_a_yaml_tag_typed_for_an_unknown_ddmq_key_is_a_problem_shown(ddmq_root: tuple[str, Any]) -> None:
    root, _broker = ddmq_root
    conf = os.path.join(root, "jobs", "ddmq.yaml")
    with open(conf, "a") as fh:
        fh.write("team: ops\n")  # a key of the operators' own, beside ddmq's
    before = open(conf, "rb").read()
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_settings(pilot, "jobs")
        box = form.query_one("#queue--team")
        assert box.value == "ops"
        box.focus()
        await pilot.press("ctrl+a", "ctrl+k", *"!!timestamp x")  # PyYAML raised AttributeError
        await settle(pilot)
        assert app.is_running and app.screen is form and box.has_class("invalid")
        assert "team: YAML cannot build '!!timestamp x' (AttributeError); quote it" in str(
            form.query_one("#serror").content)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "not saved" in said(app)
    assert open(conf, "rb").read() == before


async def test_a_doubled_minus_in_an_rsmq_setting_is_a_problem_shown() -> None:
    from redis_peer import shared_server

    from tui_helpers import Clock

    server = shared_server()
    try:
        from rsmq import RedisSMQ
    except ImportError:
        pytest.skip("PyRSMQ is not installed (the test extra pins PyRSMQ==0.6.1)")
    ns = "hunt" + os.urandom(5).hex()
    RedisSMQ(host="127.0.0.1", port=server.port, ns=ns).createQueue(qname="jobs", vt=8).execute()
    app = make_app([server.url(ns)], clock=Clock())
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_settings(pilot, "jobs")
        box = form.query_one("#queue--vt")
        assert box.value == "8"
        box.focus()
        await pilot.press("ctrl+a", "ctrl+k", *"--5")  # the RSMQ parser's int() raised ValueError
        await settle(pilot)
        assert app.is_running and app.screen is form and box.has_class("invalid")
        assert "vt" in str(form.query_one("#serror").content)
    client = server.client()
    try:
        assert client.hget(f"{ns}:jobs:Q", "vt") == b"8"
    finally:
        client.close()


# -- 3. purge of a queue whose name has controls ------------------------------------------------

@pytest.mark.parametrize("typed", ["esc\\e[31mred", "esc\x1b[31mred"])
async def test_purge_is_confirmed_by_the_name_as_shown(vsqs_root: tuple[str, Any], typed: str) -> None:
    from qconsole.screens.dialogs import TypedConfirmScreen

    root, manager = vsqs_root
    name = "esc\x1b[31mred"
    manager.get_queue(name).publish(b"one")
    manager.get_queue(name).publish(b"two")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, name)
        await pilot.press("P")
        await settle(pilot)
        assert isinstance(app.screen, TypedConfirmScreen)
        assert "Type esc\\e[31mred and press enter" in screen_text(app)
        app.screen.query_one("#typed").value = typed
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, TypedConfirmScreen), screen_text(app)
    assert [n for n in os.listdir(os.path.join(root, name)) if not n.startswith(".")] == []


# -- 4. marks survive a search ------------------------------------------------------------------

async def test_marks_survive_a_search_and_those_of_consumed_messages_go(vsqs_root: tuple[str, Any]) -> None:
    from qconsole.screens.message_list import MessageList

    root, manager = vsqs_root
    queue = manager.get_queue("jobs")
    ids = [queue.publish(f"job {i}".encode()) for i in range(1, 13)]
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_queue(pilot, "jobs")
        lst = screen.query_one(MessageList)
        await pilot.press("space", "space")  # job 1, job 2
        assert lst.marked == {ids[0], ids[1]}
        await pilot.press("slash", *"job", "space", "9", "enter")
        await settle(pilot)
        assert [m.id for m in lst.messages] == [ids[8]]
        assert "0 marked, 2 outside the view" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert lst.marked == {ids[0], ids[1]}  # were gone: the search had dropped them
        await pilot.press("slash", *"job", "space", "1", "enter")  # job 1, 10, 11, 12
        await settle(pilot)
        assert lst.marked == {ids[0]} and lst.hidden_marks == {ids[1]}
        msg = queue.receive(visibility_timeout=60)  # a consumer takes and finishes job 1 and job 2
        queue.delete(msg[0])
        msg = queue.receive(visibility_timeout=60)
        queue.delete(msg[0])
        await pilot.press("g")
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert lst.marked == set()


# -- 5. settings: what ctrl+s saved is the baseline at once ----------------------------------------

def hold_read_back(form: Any) -> Any:
    """The settings form's read-back after a save waits for the returned event (set it to let
    it land): what happens between ctrl+s and the read-back, made certain."""
    import threading

    gate = threading.Event()
    read = form._read

    def held() -> Any:
        assert gate.wait(30)
        return read()

    form._read = held
    return gate


async def saved_to_disk(pilot: Any, path: str, text: str) -> None:
    for _ in range(500):
        if os.path.exists(path) and text in open(path).read():
            return
        await pilot.pause(0.01)
    raise AssertionError(f"{text!r} never reached {path}")


async def test_escape_right_after_ctrl_s_leaves_without_asking(ddmq_root: tuple[str, Any]) -> None:
    from qconsole.screens.queue_screen import QueueScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_settings(pilot, "jobs")
        gate = hold_read_back(form)
        form.query_one("#queue--message_timeout").value = "45"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await saved_to_disk(pilot, os.path.join(root, "jobs", "ddmq.yaml"), "message_timeout: 45")
        await pilot.press("escape")  # the read-back has not landed yet
        await pilot.pause()
        assert "Leave without saving" not in screen_text(app)
        assert isinstance(app.screen, QueueScreen)
        gate.set()
        await settle(pilot)


async def test_an_edit_typed_during_a_save_survives_the_read_back(ddmq_root: tuple[str, Any]) -> None:
    root, _broker = ddmq_root
    conf = os.path.join(root, "jobs", "ddmq.yaml")
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_settings(pilot, "jobs")
        gate = hold_read_back(form)
        timeout, priority = form.query_one("#queue--message_timeout"), form.query_one("#queue--priority")
        timeout.value = "45"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await saved_to_disk(pilot, conf, "message_timeout: 45")
        priority.focus()
        await pilot.press("ctrl+a", "ctrl+k", "7")  # typed while the save is under way
        await pilot.pause()
        gate.set()
        await settle(pilot)
        assert priority.value == "7" and timeout.value == "45"  # the 7 was overwritten by the file's value
        assert "ctrl+s saves: 1 to set" in str(form.query_one("#serror").content)
        await pilot.press("ctrl+s")
        await settle(pilot)
    import yaml

    with open(conf) as fh:
        doc = yaml.safe_load(fh)
    assert doc["message_timeout"] == 45 and doc["priority"] == 7


# -- 6. with two roots open, titles and questions name the root -----------------------------------

async def test_with_two_roots_the_titles_and_questions_name_the_root(tmp_path: Any) -> None:
    from peers import ddmq_broker

    from qconsole.screens.dialogs import ConfirmScreen, PickQueueScreen, TypedConfirmScreen
    from qconsole.screens.root_screen import RootScreen

    roots = [str(tmp_path / "first"), str(tmp_path / "second")]
    for root in roots:
        broker = ddmq_broker(root, "jobs", "other")
        broker.publish("jobs", f"a job of {root}")
    second = roots[1]
    app = make_app(roots)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        table = screen.query_one("DataTable")
        table.move_cursor(row=table.get_row_index("1:jobs"))
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.qroot.target == second
        assert "queue jobs · ddmq · root second · ready 1" in screen_text(app)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.question == f"Delete 1 message(s) from jobs (root {second})?"
        await pilot.press("n", "P")
        await settle(pilot)
        assert isinstance(app.screen, TypedConfirmScreen)
        assert app.screen.question == f"Purge all 1 message(s) of jobs (root {second})?"
        await pilot.press("escape", "m")
        await settle(pilot)
        assert isinstance(app.screen, PickQueueScreen)
        assert app.screen.title_text == f"Move 1 message(s) from jobs (root {second}) to…"
        await pilot.press("escape", "p")
        await settle(pilot)
        assert "publish to jobs  (ddmq · root second)" in screen_text(app)
        await pilot.press("escape", "s")
        await settle(pilot)
        assert "settings  queue jobs  root second" in screen_text(app)


# -- 7. undo's message and palette; ctrl+q over unsaved edits --------------------------------------

async def test_u_after_the_last_undo_and_the_palette_say_what_is_true(vsqs_root: tuple[str, Any]) -> None:
    root, manager = vsqs_root
    manager.get_queue("jobs").publish(b"one")
    app = make_app([root])

    def offered(screen: Any) -> bool:
        return "Undo last delete/purge" in {c.title for c in app.get_system_commands(screen)}

    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_queue(pilot, "jobs")
        assert not offered(screen)  # (the root screen hid it; the queue screen offered it)
        await pilot.press("d", "y")
        await settle(pilot)
        assert offered(screen)
        await pilot.press("u", "y")
        await settle(pilot)
        assert not offered(screen) and len(os.listdir(os.path.join(root, "jobs"))) == 1
        await pilot.press("u")
        await settle(pilot)
        last = app.log_entries[-1].text
        assert last == "nothing to undo: this session's deletes and purges have all been restored", last


async def test_ctrl_q_over_unsaved_settings_asks_first(ddmq_root: tuple[str, Any]) -> None:
    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_settings(pilot, "jobs")
        form.query_one("#queue--message_timeout").value = "45"
        await pilot.pause()
        await pilot.press("ctrl+q")  # quit at once, the edit lost
        await settle(pilot)
        assert app.return_code is None
        assert "Quit without saving? settings of jobs: 1 field(s) changed" in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert app.screen is form and form.query_one("#queue--message_timeout").value == "45"
        await pilot.press("ctrl+q", "y")
        await settle(pilot)
        assert app.return_code == 0


async def test_ctrl_q_over_a_typed_publish_form_asks_first(ddmq_root: tuple[str, Any]) -> None:
    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("p", *"hello")
        await settle(pilot)
        await pilot.press("ctrl+q")
        await settle(pilot)
        assert app.return_code is None
        assert "Quit without saving? publish to jobs: 1 field(s) changed" in screen_text(app)
        await pilot.press("escape", "escape", "y")  # the form left (its own question said yes to): nothing to ask about
        await settle(pilot)
        await pilot.press("ctrl+q")
        await settle(pilot)
        assert app.return_code == 0
