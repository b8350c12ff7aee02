"""Issue 12's queue-screen features, driven with keys: the screen AND the files on disk."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pytest

pytest.importorskip("textual")

from qconsole.demo import FIXED_NOW, build_fixture  # noqa: E402
from tui_helpers import make_app, open_queue, screen_text, settle  # noqa: E402


@pytest.fixture
def roots(tmp_path: Any) -> tuple[str, str]:
    return build_fixture(str(tmp_path))


def files(qdir: str) -> list[str]:
    return sorted(n for n in os.listdir(qdir) if not n.startswith("."))


def the_list(app: Any) -> Any:
    from qconsole.screens.message_list import MessageList

    return app.screen.query_one(MessageList)


# -- search ---------------------------------------------------------------------------------

async def test_search_finds_payload_text_and_esc_returns_to_the_whole_queue(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "orders")
        total = len(the_list(app).messages)
        await pilot.press("slash", *"1005", "enter")
        await settle(pilot)
        lst = the_list(app)
        assert len(lst.messages) == 1
        text = screen_text(app)
        assert "search '1005' 1 found" in text
        await pilot.press("v")
        await settle(pilot)
        assert '"order": 1005' in screen_text(app)
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert len(the_list(app).messages) == total
        # by state word, without reading payloads
        await pilot.press("slash", *"inflight", "enter")
        await settle(pilot)
        assert {m.state for m in the_list(app).messages} == {"inflight"}


async def test_search_runs_in_a_worker_shows_progress_and_esc_cancels(roots: tuple[str, str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _, vroot = roots
    app = make_app([vroot])
    backend = app.roots[0]
    real = backend.read_payload
    reads: list[str] = []
    gate = threading.Event()

    def slow(msg: Any, cap: Any) -> Any:
        reads.append(msg.id)
        gate.wait(0.2)  # a slow mount: the screen must stay live meanwhile
        return real(msg, cap)

    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "orders")
        monkeypatch.setattr(backend, "read_payload", slow)
        await pilot.press("slash", *"nothing-matches-this", "enter")
        await pilot.pause(0.5)
        text = screen_text(app)
        assert "read" in text and "0 found" in text  # progress while it runs
        started = time.monotonic()
        await pilot.press("escape")  # cancel
        await pilot.pause()
        assert time.monotonic() - started < 1.0  # the event loop was never blocked
        n = len(reads)
        await pilot.pause(0.6)
        assert len(reads) <= n + 1  # the pass stopped
        assert len(the_list(app).messages) == 15
        gate.set()


def test_cli_ls_grep_since_older_than(roots: tuple[str, str]) -> None:
    from typer.testing import CliRunner

    from qconsole.cli import app, register_all

    register_all()
    _, vroot = roots
    r = CliRunner().invoke(app, ["ls", "orders", "--root", vroot, "--grep", "1005", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["count"] == 1
    r = CliRunner().invoke(app, ["ls", "orders", "--root", vroot, "--grep", "ORDER HELD", "--json"])
    assert json.loads(r.output)["count"] == 3  # case-insensitive, in flight ones too
    # ages are measured against the real clock: shift the fixture's by its distance to now
    now = time.time()
    r = CliRunner().invoke(app, ["ls", "orders", "--root", vroot, "--json", "--older-than",
                                 f"{int(now - FIXED_NOW + 600)}s"])
    older = json.loads(r.output)["count"]
    r = CliRunner().invoke(app, ["ls", "orders", "--root", vroot, "--json", "--since",
                                 f"{int(now - FIXED_NOW + 600)}s"])
    newer = json.loads(r.output)["count"]
    assert older + newer == 15 and 0 < older < 15
    r = CliRunner().invoke(app, ["ls", "orders", "--root", vroot, "--since", "soon"])
    assert r.exit_code != 0 and "bad duration" in r.output


# -- columns --------------------------------------------------------------------------------

async def test_preview_size_columns_read_only_the_visible_rows(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path / "v")
    qdir = os.path.join(root, "big")
    os.makedirs(qdir)
    for i in range(300):
        with open(os.path.join(qdir, str(int((FIXED_NOW - 1000) * 1e6) + i)), "w") as fh:
            fh.write(json.dumps({"n": i, "hello": "world"}))
    app = make_app([root])
    backend = app.roots[0]
    real = backend.read_payload
    reads: list[str] = []

    def counting(msg: Any, cap: Any) -> Any:
        reads.append(msg.id)
        return real(msg, cap)

    monkeypatch.setattr(backend, "read_payload", counting)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_queue(pilot, "big")
        await settle(pilot)
        text = screen_text(app)
        assert " size payload" in text and '{"n":0,"hello":"world"}' in text and "26B" in text
        assert 0 < len(reads) <= 40  # the rows on screen, not the 300
        await pilot.press("end")
        await settle(pilot)
        assert '{"n":299,"hello":"world"}' in screen_text(app)
        assert len(reads) <= 80
    # at 80 columns the preview gives way first; ids and countdowns stay
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "big")
        header = screen_text(app).splitlines()[2]
        assert "expires" in header and len(header.rstrip()) <= 80


async def test_expired_rows_say_how_long_ago_and_redeliveries_show(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "emails")
        await settle(pilot)
        rows = screen_text(app).splitlines()
        expired = next(r for r in rows if " expired " in r and " ago " in r)
        assert "40s ago" in expired and expired.rstrip().endswith("2")  # requeue_counter 2
        assert "rd" in rows[2]


# -- selection ------------------------------------------------------------------------------

async def test_selection_by_state_range_invert_and_requeue_every_expired(tmp_path: Any) -> None:
    from tui_helpers import Clock

    now = time.time()  # the requeue itself decides what is expired by this host's clock
    _, vroot = build_fixture(str(tmp_path), now=now)
    qdir = os.path.join(vroot, "orders")
    app = make_app([vroot], clock=Clock(now))
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "orders")
        lst = the_list(app)
        await pilot.press("e")
        assert {m.state for m in lst.selection()} == {"expired"}
        await pilot.press("f")
        assert {m.state for m in lst.selection()} == {"expired", "inflight"}
        await pilot.press("i")
        assert {m.state for m in lst.selection()} == {"ready"} and len(lst.marked) == 12
        await pilot.press("a")  # none
        await pilot.press("home", "shift+down", "shift+down")
        assert [m.id for m in lst.selection()] == [m.id for m in lst.messages[:3]]
        await pilot.press("a", "R")
        await settle(pilot)
    held = [n for n in files(qdir) if "." in n]
    assert len(held) == 2  # the expired one is ready again, the in-flight ones untouched
    assert "requeue" in " ".join(e.text for e in app.log_entries)


# -- undo and the trash view -----------------------------------------------------------------

async def test_u_undoes_the_last_delete_and_the_trash_view_restores(roots: tuple[str, str]) -> None:
    _, vroot = roots
    qdir = os.path.join(vroot, "orders")
    before = files(qdir)
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "orders")
        first = the_list(app).messages[0]
        await pilot.press("d", "y")
        await settle(pilot)
        assert first.id not in files(qdir)
        said = [e.text for e in app.log_entries if e.text.startswith("delete orders")][-1]
        assert "(u undoes)" in said and "qconsole trash restore" not in said  # (no -r: wrong in a multi-root session)
        await pilot.press("u")  # asks first, naming the queue the change was made in
        await settle(pilot)
        assert "Undo: restore the last change of orders?" in screen_text(app)
        await pilot.press("n")
        await settle(pilot)
        assert first.id not in files(qdir) and len(app.undo_stack) == 1
        await pilot.press("u", "y")
        await settle(pilot)
        assert files(qdir) == before
        await pilot.press("u")  # nothing left to undo: says so, changes nothing
        await settle(pilot)
        assert "nothing to undo" in app.log_entries[-1].text
        # delete two, then restore them from the trash view
        await pilot.press("space", "space", "d", "y")
        await settle(pilot)
        assert len(files(qdir)) == len(before) - 2
        await pilot.press("t")
        await settle(pilot)
        text = screen_text(app)
        assert "delete" in text and "orders" in text and " 2 " in text
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert files(qdir) == before


# -- dead letters ----------------------------------------------------------------------------

async def test_dead_letter_view_lists_redelivered_messages_and_moves_them(roots: tuple[str, str]) -> None:
    droot, _ = roots
    app = make_app([droot], poison_threshold=2)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "emails")
        await pilot.press("D")
        await settle(pilot)
        lst = the_list(app)
        assert [m.id for m in lst.messages] == ["f25eed5eed5eed5eed5eed5eed5eedab"]  # requeue_counter 2
        assert "redelivered ≥2 1 found" in screen_text(app)
        await pilot.press("a", "m")
        await settle(pilot)
        await pilot.press("down", "enter")  # reports (after emails's own name is left out)
        await settle(pilot)
    grown = [len([n for n in os.listdir(os.path.join(droot, q)) if ".ddmq" in n]) for q in ("reports", "thumbnails")]
    assert sorted(grown) == [1, 3] or sorted(grown) == [0, 4]  # reports had 3, thumbnails 0: one more in one
    assert sum(grown) == 4
    assert f"move emails to {'reports' if grown[0] == 4 else 'thumbnails'}: 1 done" in [e.text for e in app.log_entries]
    assert not any("f25eed" in n for n in os.listdir(os.path.join(droot, "emails", "work")))


# -- peek ------------------------------------------------------------------------------------

async def test_peek_next_previous_wide_keeps_state_save_and_whole(roots: tuple[str, str], tmp_path: Any) -> None:
    _, vroot = roots
    qdir = os.path.join(vroot, "orders")
    big_id = str(int((FIXED_NOW - 2000) * 1e6))  # the oldest: first in the list
    with open(os.path.join(qdir, big_id), "w") as fh:
        fh.write("x" * 70_000 + "THE END")
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "orders")
        await pilot.press("v")
        await settle(pilot)
        assert app.screen.msg.id == big_id
        assert "showing 64.0 KiB of 68.4 KiB" in screen_text(app)
        await pilot.press("a")
        await settle(pilot)
        assert "showing" not in screen_text(app)
        out = str(tmp_path / "saved.bin")
        await pilot.press("s")
        await pilot.pause()
        app.screen.query_one("#ask").value = out
        await pilot.press("enter")
        await settle(pilot)
        with open(out, "rb") as fh:
            assert fh.read().endswith(b"THE END")
        await pilot.press("w")  # wide: the metadata pane hides
        await pilot.press("n")
        await settle(pilot)
        assert app.screen.index == 1 and '"order": 1000' in screen_text(app)
        assert app.screen.query_one("#peek-meta").has_class("hidden")  # still wide
        await pilot.press("b", "b")
        await settle(pilot)
        assert app.screen.index == 0
        await pilot.press("escape", "v")
        await settle(pilot)
        assert app.screen.query_one("#peek-meta").has_class("hidden")  # the choice holds


# -- root screen -----------------------------------------------------------------------------

async def test_root_sort_thresholds_and_warnings(roots: tuple[str, str]) -> None:
    from qconsole.output.nagios import Thresholds

    app = make_app(list(roots), thresholds=Thresholds(warn_ready=5, crit_ready=10, warn_expired=1))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("DataTable")

        def names() -> list[str]:
            return [screen.scans[str(r.key.value)][1].name for r in table.ordered_rows]

        assert names()[0] == "emails"
        await pilot.press("o")  # by backlog
        await pilot.pause()
        assert names()[:2] == ["orders", "emails"]
        assert "by backlog" in screen_text(app)
        await pilot.press("o", "o")  # by expired
        assert names()[0] in ("emails", "orders")
        orders = table.get_row(next(k for k in screen.scans if k.endswith(":orders")))
        assert "red" in str(orders[1].style) and "reverse" in str(orders[1].style)  # 12 ready: critical
        emails = table.get_row(next(k for k in screen.scans if k.endswith(":emails")))
        assert "yellow" in str(emails[1].style)  # 8 ready: warning
        assert emails[0].plain.startswith("!")  # mixed-width priorities
        table.move_cursor(row=table.get_row_index(next(k for k in screen.scans if k.endswith(":emails"))))
        await pilot.pause()
        assert "mixed-width priorities" in screen_text(app)


async def test_clock_skew_is_a_root_warning(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    os.makedirs(os.path.join(root, "future"))
    open(os.path.join(root, "future", str(int((FIXED_NOW + 3600) * 1e6))), "w").close()
    app = make_app([root])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "clock skew" in screen_text(app)


# -- the message log -------------------------------------------------------------------------

async def test_message_log_keeps_the_notifications(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot], read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.say("a long notification that a toast would cut at eighty columns: " + "x" * 60, "warning")
        await pilot.press("o")
        await pilot.press("L")
        await pilot.pause()
        text = screen_text(app)
        assert "queues sorted by backlog" in text and "a long notification" in text
        assert text.index("queues sorted") < text.index("a long notification")  # newest first


async def test_a_search_view_numbers_ready_rows_by_their_place_in_the_queue(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        await open_queue(pilot, "orders")
        full = the_list(app).messages
        await pilot.press("slash", *"1005", "enter")  # 6th in line (VSQS: oldest first), 1st of the view
        await settle(pilot)
        lst = the_list(app)
        rows = {m.id: ln for m in lst.messages for ln in screen_text(app).splitlines() if m.id in ln}
        late = [m for m in lst.messages if "1714564205" in m.id][0]
        assert full.index_of(late.id) == 5
        assert rows[late.id].split()[0] == "6", rows[late.id]  # its place in the queue, not in the view
        assert len(lst.messages) == 1  # (the view's own order would say 1)
        await pilot.press("escape")  # the whole queue again
        await pilot.pause()
        row = next(ln for ln in screen_text(app).splitlines() if late.id in ln)
        assert row.split()[0] == "6"


async def test_a_view_number_follows_the_queue_when_its_head_is_consumed(roots: tuple[str, str]) -> None:
    _, vroot = roots
    app = make_app([vroot])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_queue(pilot, "orders")
        full = screen.all_messages
        await pilot.press("slash", *"1005", "enter")
        await settle(pilot)
        row = next(ln for ln in screen_text(app).splitlines() if "1714564205" in ln)
        assert row.split()[0] == "6", row
        for i in range(3):  # a consumer takes the first three
            os.unlink(os.path.join(vroot, "orders", full.relpath(i)))
        await pilot.press("g")
        await settle(pilot)
        row = next(ln for ln in screen_text(app).splitlines() if "1714564205" in ln)
        assert row.split()[0] == "3", row


async def test_a_match_received_while_the_search_runs_is_not_numbered_in_line(tmp_path: Any) -> None:
    from test_tui_bugs import vsqs_queue

    root = str(tmp_path / "v")
    names = vsqs_queue(root, "q", 10)
    target = names[7]  # 8th in line; its payload is "message 7"
    gate = threading.Event()
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await open_queue(pilot, "q")
        read = screen.qroot.read_payload

        def held_after_the_match(msg: Any, cap: Any) -> Any:
            if msg.id == names[8]:  # the pass found the target and has not posted it yet
                assert gate.wait(10)
            return read(msg, cap)

        screen.qroot.read_payload = held_after_the_match
        await pilot.press("slash", *"message 7", "enter")
        await pilot.pause(0.3)
        # a consumer receives it meanwhile (VSQS: renamed id.deadline), and the screen lists again
        os.rename(os.path.join(root, "q", target), os.path.join(root, "q", f"{target}.{int((FIXED_NOW + 300) * 1e6)}"))
        screen.rescan()
        await pilot.pause(0.5)
        gate.set()
        await settle(pilot)
        await pilot.pause(0.3)
        rows = [ln for ln in screen_text(app).splitlines() if target in ln]
        assert rows and rows[0].split()[0] == "-", rows  # not "10" of 9 ready ones


async def test_the_trash_view_keeps_a_long_queue_names_head_and_tail(tmp_path: Any) -> None:
    """notifications was cut to 'notification': in a root that also has that queue, the wrong one."""
    root = str(tmp_path / "v")
    for q in ("notifications", "notification"):
        os.makedirs(os.path.join(root, q))
        with open(os.path.join(root, q, "1700000000000001"), "w") as fh:
            fh.write("x")
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        await open_queue(pilot, "notifications")
        await pilot.press("d", "y")
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        text = screen_text(app)
        assert "notifi…tions" in text and " notification " not in text, text


async def test_a_queue_deleted_while_open_shows_no_rows_and_says_so(tmp_path: Any) -> None:
    """Its old rows and counts stayed beside the red note, and could be marked and acted on."""
    import shutil

    root = str(tmp_path / "v")
    os.makedirs(os.path.join(root, "tmpq"))
    for i in range(3):
        with open(os.path.join(root, "tmpq", f"170000000000000{i}"), "w") as fh:
            fh.write("x")
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        screen = await open_queue(pilot, "tmpq")
        from qconsole.screens.message_list import MessageList

        assert len(screen.query_one(MessageList).messages) == 3
        shutil.rmtree(os.path.join(root, "tmpq"))
        await pilot.press("g")
        await settle(pilot)
        text = screen_text(app)
        assert len(screen.query_one(MessageList).messages) == 0
        assert "no queue 'tmpq'" in text and "ready 3" not in text, text


async def test_the_palette_offers_only_what_the_screen_can_do(roots: tuple[str, str]) -> None:
    """On a VSQS queue it offered Dead letters and Settings, which did nothing when chosen."""
    droot, vroot = roots
    app = make_app([vroot, droot])
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_queue(pilot, "orders")
        offered = {c.title for c in app.get_system_commands(screen)}
        assert "Requeue" in offered and "Peek" in offered
        assert not {"Settings", "Dead letters (redelivered)", "Mark a range"} & offered, offered
        await pilot.press("escape")
        await settle(pilot)
        ddmq = await open_queue(pilot, "emails")
        assert "Settings" in {c.title for c in app.get_system_commands(ddmq)}


async def test_the_gone_note_leaves_when_the_cursor_moves(tmp_path: Any) -> None:
    root = str(tmp_path / "v")
    os.makedirs(os.path.join(root, "q"))
    for i in range(4):
        with open(os.path.join(root, "q", f"170000000000000{i}"), "w") as fh:
            fh.write("x")
    app = make_app([root])
    async with app.run_test(size=(100, 24)) as pilot:
        await open_queue(pilot, "q")
        await pilot.press("down")
        await settle(pilot)
        os.unlink(os.path.join(root, "q", "1700000000000001"))  # consumed under the cursor
        await pilot.press("g")
        await settle(pilot)
        assert "1700000000000001 is gone" in screen_text(app)
        await pilot.press("end")
        await settle(pilot)
        assert "is gone" not in screen_text(app)
