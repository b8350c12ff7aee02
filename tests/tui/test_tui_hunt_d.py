"""Bug hunt D: the forms (publish, settings), the dialogs (move, delete, purge, trash), an RSMQ
namespace beside file roots, resizes and rapid keys, in tmux at 80x24, 120x40 and 200x50. One
test per finding, written to fail before its fix."""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest.importorskip("textual")

from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402


def said(app: Any) -> str:
    return "\n".join(e.text for e in app.log_entries)


def rsmq_namespace(*queues: str) -> tuple[Any, str]:
    """The test process's Redis server and a fresh namespace holding ``queues``, made by qconsole."""
    from redis_peer import shared_server

    from qconsole.backends import open_target

    server = shared_server()
    ns = "huntd" + os.urandom(5).hex()
    backend = open_target(server.url(ns))
    for queue in queues:
        backend.create_queue(queue)
    return server, ns


async def open_from_root(pilot: Any, key: str, kind: type) -> Any:
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, kind), pilot.app.screen
    return pilot.app.screen


# -- 1. settings: a value that parses but is out of bounds read as the effective value -------------


async def _open_trash(pilot: Any) -> Any:
    """``t``: the trash screen, once its batches are listed."""
    from qconsole.screens.trash_screen import TrashScreen

    await pilot.press("t")
    await settle(pilot)
    trash = pilot.app.screen
    assert isinstance(trash, TrashScreen)
    while trash.last_batch is None:
        await pilot.pause(0.05)
    await settle(pilot)
    return trash

async def test_an_out_of_bounds_rsmq_setting_reads_invalid_in_every_field_it_is_typed() -> None:
    """vt -5 and delay 99999999999 typed in an RSMQ queue's settings: the effective column read
    "-5 (queue)" and "99999999999 (queue)" (they parse as integers; only the store's bounds refuse
    them), the fields were not marked, and only the first one's problem was said at all."""
    from textual.widgets import Input

    from qconsole.screens.settings_screen import SettingsScreen

    server, ns = rsmq_namespace("jobs")
    app = make_app([server.url(ns)])
    async with app.run_test(size=(120, 40)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        for key, typed in (("vt", "-5"), ("delay", "99999999999")):
            box = form.query_one(f"#queue--{key}", Input)
            form.set_focus(box)
            await pilot.press("ctrl+a", "ctrl+k", *typed)
            await settle(pilot)
        for key in ("vt", "delay"):
            shown = str(form.query_one(f"#eff--{key}").content)
            assert "invalid (queue)" in shown, (key, shown)  # was "-5 (queue)", "99999999999 (queue)"
            assert form.query_one(f"#queue--{key}", Input).has_class("invalid"), key
        status = str(form.query_one("#serror").content)
        assert "vt must be between 0 and 9999999" in status, status
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "not saved" in said(app), said(app)
    client = server.client()
    try:
        assert client.hget(f"{ns}:jobs:Q", "vt") == b"30" and client.hget(f"{ns}:jobs:Q", "delay") == b"0"
    finally:
        client.close()


async def test_a_ddmq_timeout_over_its_maximum_reads_invalid(ddmq_root: tuple[str, Any]) -> None:
    from textual.widgets import Input

    from qconsole.screens.settings_screen import SettingsScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(100, 30)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        box = form.query_one("#queue--message_timeout", Input)
        form.set_focus(box)
        await pilot.press(*"99999999999")
        await settle(pilot)
        shown = str(form.query_one("#eff--message_timeout").content)
        assert "invalid (queue)" in shown, shown  # was "99999999999 (queue)"
        assert "message_timeout: at most" in str(form.query_one("#serror").content)


# -- 2. publish: an RSMQ delay past rsmq's bounds read "ctrl+s publishes" ---------------------------

async def test_an_rsmq_delay_past_its_bounds_is_said_while_typing() -> None:
    """delay 10**30 in the publish form of an RSMQ queue: the form's line said "ctrl+s publishes",
    and only ctrl+s was refused, in a toast (the option declared no maximum; the store checked)."""
    from qconsole.screens.publish_screen import PublishScreen

    server, ns = rsmq_namespace("jobs")
    app = make_app([server.url(ns)])
    async with app.run_test(size=(120, 40)) as pilot:
        form = await open_from_root(pilot, "p", PublishScreen)
        form.set_focus(form.query_one("#delay"))
        await pilot.press(*"1000000000000000000000000000000")
        await settle(pilot)
        line = str(form.query_one("#perror").content)
        assert "delay must be at most 9,999,999" in line, line  # was "ctrl+s publishes, ..."
        await pilot.press("ctrl+a", "ctrl+k", *"9999999")
        await settle(pilot)
        assert "ctrl+s publishes" in str(form.query_one("#perror").content)


# -- 3. settings: a ddmq.yaml key with a non-ASCII letter stopped the console ----------------------

async def test_a_ddmq_yaml_key_with_a_non_ascii_letter_opens_the_settings(ddmq_root: tuple[str, Any]) -> None:
    """`note_ünï: hello` in the root's ddmq.yaml (a colleague's note): s stopped the console with
    Textual's BadIdentifier, exit 70 (the key is a Python identifier, so it was made a widget id)."""
    from textual.widgets import Input

    from qconsole.screens.settings_screen import SettingsScreen

    root, _broker = ddmq_root
    with open(os.path.join(root, "ddmq.yaml"), "w", encoding="utf-8") as fh:
        fh.write('message_timeout: 300\nnote_ünï: "héllo wörld"\n')
    app = make_app([root])
    async with app.run_test(size=(120, 40)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        assert app.is_running and form.fields is not None
        assert "note_ünï" in screen_text(app) and "héllo wörld" in screen_text(app)
        # it is a field like the others: changed, it is saved
        box = next(f for f in form.fields if f.setting == ("root", "note_ünï"))
        assert isinstance(box, Input)
        form.set_focus(box)
        await pilot.press("ctrl+a", "ctrl+k", *"bye")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
    with open(os.path.join(root, "ddmq.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    assert "bye" in text and "message_timeout: 300" in text, text


# -- 4. the trash of a ddmq root named file names, not the ids the delete question named ----------

async def test_the_trash_of_a_ddmq_root_names_the_ids_deleted(ddmq_root: tuple[str, Any]) -> None:
    """a, d, y on a ddmq queue, then t: the delete question named `7ec7eec4...`, the trash's
    "holds" column `999.1795766822854003… +2` (the first file name, cut to the column: no id
    of any message in it)."""
    from qconsole.backends import open_target

    root, broker = ddmq_root
    for text in ("one", "two", "three"):
        broker.publish("jobs", text)
    backend = open_target(root)
    app = make_app([root])
    async with app.run_test(size=(120, 40)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("a", "d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        (batch,) = (await _open_trash(pilot)).batches
        names = batch.ids[:2]
        shown = screen_text(app)
        assert ".ddmq" not in shown, shown  # was "999.1795766822854003… +2"
        assert backend.message_id(names[0])[:8] in shown, shown


# -- 5. publish: a ddmq priority past what a file name holds read "ctrl+s publishes" ----------------

async def test_a_ddmq_priority_past_its_bound_is_said_while_typing(ddmq_root: tuple[str, Any]) -> None:
    """priority 99999999999999999999 (20 digits) in a ddmq publish form: the line said "ctrl+s
    publishes", and ctrl+s was refused in a toast ("priority must be between 0 and
    999999999999999999"): the option declared no maximum, the store's write checked it."""
    from qconsole.screens.publish_screen import PublishScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(120, 40)) as pilot:
        form = await open_from_root(pilot, "p", PublishScreen)
        form.set_focus(form.query_one("#priority"))
        await pilot.press(*"99999999999999999999")
        await settle(pilot)
        line = str(form.query_one("#perror").content)
        assert "priority must be at most 999,999,999,999,999,999" in line, line  # was "ctrl+s publishes, ..."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, PublishScreen) and "publish jobs" not in said(app)
        await pilot.press("backspace", "backspace")
        await settle(pilot)
        assert "ctrl+s publishes" in str(form.query_one("#perror").content)


# -- 6. a listing that failed with an unexpected error said "listing messages…" for good -----------

async def test_a_listing_that_fails_unexpectedly_is_said_and_tried_again(vsqs_root: tuple[str, Any],
                                                                        monkeypatch: Any) -> None:
    """enter on a VSQS queue while its listing raised an error that is neither the store's own
    nor an OSError (seen in tmux: a module of the store being replaced under a running console):
    the worker died without a word, the status said "listing messages…" for good, and no
    rescan was scheduled again, so the queue stayed blank after the fault was gone."""
    from qconsole.backends.vsqs.backend import VsqsBackend

    root, manager = vsqs_root
    for i in range(3):
        manager.get_queue("jobs").publish(f"m{i}".encode())
    original = VsqsBackend.list_messages
    faults = {"left": 1}

    def failing(self: Any, *args: Any, **kw: Any) -> Any:
        if faults["left"]:
            faults["left"] -= 1
            raise ValueError("a store's listing at fault")
        return original(self, *args, **kw)

    monkeypatch.setattr(VsqsBackend, "list_messages", failing)
    app = make_app([root], interval=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        queue = await open_queue(pilot, "jobs")
        shown = screen_text(app)
        assert "listing messages…" not in shown, shown
        assert "ValueError: a store's listing at fault" in shown, shown
        for _ in range(100):  # the next pass (2 s later) lists it
            if queue.scan is not None and len(queue.all_messages) == 3:
                break
            await pilot.pause(0.05)
        assert len(queue.all_messages) == 3


# -- 7. publish: a count pasted as thousands of digits read "not understood: ValueError" -----------

async def test_a_pasted_count_of_thousands_of_digits_is_the_counts_problem(ddmq_root: tuple[str, Any]) -> None:
    """A run of 5,000 digits pasted in the count: the form's line read "not understood:
    ValueError: Exceeds the limit (4300 digits) for integer string conversion ... use
    sys.set_int_max_str_digits()" (Python's own limit on int(), hit before the range check)."""
    from textual import events

    from qconsole.screens.publish_screen import PublishScreen

    root, _broker = ddmq_root
    app = make_app([root])
    async with app.run_test(size=(120, 40)) as pilot:
        form = await open_from_root(pilot, "p", PublishScreen)
        count = form.query_one("#count")
        form.set_focus(count)
        await pilot.press("ctrl+a", "ctrl+k")
        count.post_message(events.Paste("9" * 5000))
        await settle(pilot)
        line = str(form.query_one("#perror").content)
        assert line == "count: a whole number from 1 to 100000", line
        await pilot.press("ctrl+a", "ctrl+k")
        count.post_message(events.Paste("0" * 5000 + "2"))
        await settle(pilot)
        assert "ctrl+s publishes" in str(form.query_one("#perror").content)
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert sum(".ddmq" in n for n in os.listdir(os.path.join(root, "jobs"))) == 2


# -- 8. settings: a save that failed, its read-back failing too, dropped the edits as if saved ------

async def test_a_failed_save_leaves_the_edits_pending_when_nothing_can_be_read_back() -> None:
    """vt 45 typed in an RSMQ queue's settings and ctrl+s after the queue was deleted behind
    the form: "save settings: no queue 'doomed'", and then the line read "ctrl+s saves (atomic;
    ...)" with nothing pending, a second ctrl+s "nothing to save", and escape left without
    asking: the edit was taken for saved (the baseline moves at ctrl+s and only a successful
    read-back put it back)."""
    from textual.widgets import Input

    from qconsole.backends import open_target
    from qconsole.screens.dialogs import ConfirmScreen
    from qconsole.screens.settings_screen import SettingsScreen

    server, ns = rsmq_namespace("doomed")
    app = make_app([server.url(ns)])
    async with app.run_test(size=(120, 40)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        box = form.query_one("#queue--vt", Input)
        form.set_focus(box)
        await pilot.press("ctrl+a", "ctrl+k", "4", "5")
        await settle(pilot)
        open_target(server.url(ns)).delete_queue("doomed")
        await pilot.press("ctrl+s")
        await settle(pilot)
        for _ in range(40):
            await pilot.pause(0.05)
            await settle(pilot)
        assert "no queue 'doomed'" in said(app), said(app)
        assert box.value == "45"
        status = str(form.query_one("#serror").content)
        assert "ctrl+s saves: 1 to set" in status, status  # was "ctrl+s saves (atomic; ...)"
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)  # was: back to the root screen, the edit gone


# -- 9. the trash of an RSMQ namespace: a purge of 20 messages "holds" 2 ids "+6" -----------------

async def test_the_trash_says_how_many_more_a_batch_holds_than_it_names() -> None:
    """P on an RSMQ queue of 20 messages, then t: the holds column read "<id>, <id>… +6" (the
    store lists a batch's first 8 ids; the +N counted those, not the batch)."""
    from qconsole.backends import open_target

    server, ns = rsmq_namespace("jobs")
    backend = open_target(server.url(ns))
    backend.publish("jobs", [b"x"] * 20, {})
    app = make_app([server.url(ns)])
    async with app.run_test(size=(120, 40)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("P", *"jobs", "enter")
        await settle(pilot)
        (batch,) = (await _open_trash(pilot)).batches
        assert batch.count == 20 and len(batch.ids) < 20
        shown = screen_text(app)
        assert "+18" in shown and "+6" not in shown, shown


# -- 10. settings under --read-only: the form's line offered ctrl+s --------------------------------

async def test_read_only_settings_do_not_offer_ctrl_s(ddmq_root: tuple[str, Any]) -> None:
    """`qconsole --read-only ROOT`, s: the footer rightly had no ^s (and the fields were
    disabled), but the line under the form said "ctrl+s saves (atomic; unknown keys are kept)"."""
    from qconsole.screens.settings_screen import SettingsScreen

    root, _broker = ddmq_root
    app = make_app([root], read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        form = await open_from_root(pilot, "s", SettingsScreen)
        assert form.fields and all(f.disabled for f in form.fields)
        line = str(form.query_one("#serror").content)
        assert "ctrl+s" not in line and "READ-ONLY" in line, line
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "config" not in said(app)


# -- 11. a long queue name: the publish and settings titles named no queue --------------------------

@pytest.mark.parametrize("key", ["p", "s"])
async def test_a_long_queue_name_is_shortened_in_the_form_titles(tmp_path: Any, key: str) -> None:
    """p (or s) on a ddmq queue of a 120-character name at 80x24: the one-row title read
    "publish to" ("settings  queue") and nothing else: the name, one word too long for the row,
    wrapped onto a second row the title does not show, and the store and root with it. The
    name is now shortened around … as the queue screen's title does, and follows a resize."""
    from peers import ddmq_broker

    from qconsole.screens.publish_screen import PublishScreen
    from qconsole.screens.settings_screen import SettingsScreen

    root = str(tmp_path / "dd")
    name = "q" * 60 + "-tail-eu"
    ddmq_broker(root, name)
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_from_root(pilot, key, PublishScreen if key == "p" else SettingsScreen)
        title = screen_text(app).splitlines()[1]
        assert "…" in title and "tail-eu" in title, title  # was "publish to" (or "settings  queue") alone
        if key == "p":
            assert "(ddmq)" in title, title
        await pilot.resize_terminal(160, 24)
        await settle(pilot)
        title = screen_text(app).splitlines()[1]
        assert name in title, title  # whole again where it fits


async def test_a_long_root_path_is_shortened_in_the_trash_title(tmp_path: Any) -> None:
    """t on a root whose path is longer than the row: the title read "trash of" alone."""
    from peers import ddmq_broker

    from qconsole.screens.trash_screen import TrashScreen

    root = str(tmp_path / ("shared-queues-" * 6 + "prod"))
    ddmq_broker(root, "jobs")
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_from_root(pilot, "t", TrashScreen)
        title = screen_text(app).splitlines()[1]
        assert "…" in title and title.rstrip().endswith("prod"), title


# -- 12. an undo that failed (the store unreachable for a moment) was forgotten --------------------

async def test_an_undo_that_failed_can_be_tried_again(ddmq_root: tuple[str, Any], monkeypatch: Any) -> None:
    """d, y, then u, y while the store could not be reached (a Redis server restarting, an NFS
    mount hung up): "undo: ..." said the error, and the next u said "nothing to undo: this
    session's deletes and purges have all been restored" of a message still in the trash (the
    entry left the undo list before the restore ran). A batch restored elsewhere meanwhile is
    forgotten as before."""
    from qconsole.backends import open_target
    from qconsole.backends.fs.root import FileBackend
    from qconsole.errors import OperationError
    from qconsole.screens.dialogs import ConfirmScreen

    root, broker = ddmq_root
    broker.publish("jobs", "keep me")
    broker.publish("jobs", "and me")
    original = FileBackend.trash_restore
    faults = {"left": 1}

    def flaky(self: Any, batch: str) -> Any:
        if faults["left"]:
            faults["left"] -= 1
            raise OperationError("cannot reach the store (a test's fault)")
        return original(self, batch)

    monkeypatch.setattr(FileBackend, "trash_restore", flaky)

    def held() -> int:
        return sum(".ddmq" in n for n in os.listdir(os.path.join(root, "jobs")))

    app = make_app([root])
    async with app.run_test(size=(120, 40)) as pilot:
        await open_queue(pilot, "jobs")
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert held() == 1
        await pilot.press("u")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert "cannot reach the store" in said(app)
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen), said(app)  # was "nothing to undo: ... all been restored"
        await pilot.press("y")
        await settle(pilot)
        assert held() == 2
        # restored elsewhere (another terminal's `qconsole trash restore`): forgotten
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        (batch,) = [b.batch for b in open_target(root).trash_list()]
        original(open_target(root), batch)
        await pilot.press("u")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        await pilot.press("u")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert said(app).splitlines()[-1].startswith("nothing to undo"), said(app)


# -- 13. a publish that failed: the form's line went back to "ctrl+s publishes" -------------------

async def test_a_failed_publish_says_why_under_the_form() -> None:
    """A payload of 70,000 characters pasted in an RSMQ queue's publish form, ctrl+s: a toast
    said "publish: message of 70000 characters ... is longer than the queue's maxsize (65536)"
    and vanished, and the line under the form went back to "ctrl+s publishes, tab moves between
    fields, escape cancels", as if nothing had happened."""
    from textual import events

    from qconsole.screens.publish_screen import PublishScreen

    server, ns = rsmq_namespace("jobs")
    app = make_app([server.url(ns)])
    async with app.run_test(size=(80, 24)) as pilot:
        form = await open_from_root(pilot, "p", PublishScreen)
        app.post_message(events.Paste("z" * 70000))  # as the terminal's driver sends it: to the focused payload
        await settle(pilot)
        await pilot.press("ctrl+s")
        for _ in range(40):
            await settle(pilot)
            if not form.publishing:
                break
            await pilot.pause(0.05)
        await settle(pilot)
        assert isinstance(app.screen, PublishScreen)
        line = str(form.query_one("#perror").content)
        assert line.startswith("not published: message of 70000 characters") and "maxsize (65536)" in line, line
        # (was "ctrl+s publishes, ...")
        assert "maxsize (65536)" in " ".join(screen_text(app).split())  # wrapped at 80 columns, not cut
        form.set_focus(form.query_one("#count"))
        await pilot.press("ctrl+a", "ctrl+k", "2")
        await settle(pilot)
        assert "ctrl+s publishes" in str(form.query_one("#perror").content)
