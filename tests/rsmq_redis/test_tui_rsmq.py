"""The console over RSMQ (Pilot, a real redis-server, PyRSMQ as the client that made the states):
root screen counts in all four states, the queue screen's rows (countdowns to visibility for
in-flight and delayed messages, receive counts), peek, a requeue that changes Redis, and a mixed
session of a file root beside a Redis target. Also the `open` command with several targets."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

pytest.importorskip("textual")

from qconsole.backends import open_target  # noqa: E402
from qconsole.demo import build_fixture  # noqa: E402

from tui_helpers import screen_text, settle  # noqa: E402

from .conftest import qconsole  # noqa: E402


def four_states(pyrsmq: Any) -> dict[str, str]:
    """jobs: 2 ready, 1 in flight (600 s), 1 expired received twice, 1 delayed (600 s)."""
    pyrsmq.createQueue(qname="jobs").execute()
    ids = {}
    ids["inflight"] = pyrsmq.sendMessage(qname="jobs", message="held by a live consumer").execute()
    got = pyrsmq.receiveMessage(qname="jobs", vt=600).execute()
    assert got["id"] == ids["inflight"]
    ids["expired"] = pyrsmq.sendMessage(qname="jobs", message='{"job": "crashed twice"}').execute()
    for rc in (1, 2):  # received by two consumers that both died: visible again, rc 2
        got = pyrsmq.receiveMessage(qname="jobs", vt=0).execute()
        assert got["id"] == ids["expired"] and int(got["rc"]) == rc
    ids["ready1"] = pyrsmq.sendMessage(qname="jobs", message='{"job": 1}').execute()
    ids["ready2"] = pyrsmq.sendMessage(qname="jobs", message='{"job": 2}').execute()
    ids["delayed"] = pyrsmq.sendMessage(qname="jobs", message="later", delay=600).execute()
    time.sleep(0.01)  # the expired one's score (its last receive) is now strictly in the past
    return ids


def make_app(targets: list[str], **kw: Any) -> Any:
    from qconsole.screens.app import QConsoleApp

    kw.setdefault("interval", 0)
    kw.setdefault("live_countdown", False)
    return QConsoleApp([open_target(t) for t in targets], audit_log=os.devnull, **kw)


def row_of(screen: Any, queue: str, root_index: int | None = None) -> list[str]:
    """The root screen's cells of ``queue`` as plain text."""
    table = screen.query_one("DataTable")
    keys = [k for k in screen.scans if k.endswith(":" + queue) and (root_index is None or k.startswith(f"{root_index}:"))]
    assert len(keys) == 1, list(screen.scans)
    return [getattr(c, "plain", str(c)) for c in table.get_row(keys[0])]


async def open_queue(pilot: Any, queue: str, root_index: int) -> Any:
    from qconsole.screens.queue_screen import QueueScreen

    screen = pilot.app.screen
    table = screen.query_one("DataTable")
    key = next(k for k in screen.scans if k == f"{root_index}:{queue}")
    table.move_cursor(row=table.get_row_index(key))
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, QueueScreen)
    return pilot.app.screen


async def test_root_and_queue_screens_over_rsmq_in_all_four_states(pyrsmq, url, r, ns) -> None:
    from qconsole.screens.message_list import MessageList
    from qconsole.screens.peek_screen import PeekScreen
    from qconsole.screens.root_screen import RootScreen

    ids = four_states(pyrsmq)
    app = make_app([url])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        scan = screen.scans["0:jobs"][1]
        assert {s: scan.counts[s] for s in ("ready", "inflight", "expired", "delayed")} == \
            {"ready": 2, "inflight": 1, "expired": 1, "delayed": 1}
        cells = row_of(screen, "jobs")
        assert [c.strip() for c in cells[1:5]] == ["2", "1", "1", "1"]
        text = screen_text(app)
        assert " dl " in text  # the column of the other states says what it counts here
        assert f"?ns={ns}" in text  # the header names the target

        qs = await open_queue(pilot, "jobs", 0)
        await settle(pilot)
        lst = qs.query_one(MessageList)
        by_id = {m.id: m for m in lst.messages}
        assert set(by_id) == set(ids.values())
        assert [m.state for m in lst.messages[:3]].count("ready") + [m.state for m in lst.messages[:3]].count("expired") == 3
        # ready and expired (visible) first, in the order a receive takes them; then held ones
        assert {lst.messages[i].id for i in (0, 1, 2)} == {ids["expired"], ids["ready1"], ids["ready2"]}
        await pilot.pause(0.2)
        await settle(pilot)
        text = screen_text(app)
        lines = {key: next(ln for ln in text.splitlines() if mid[:16] in ln) for key, mid in ids.items()}
        # countdowns: in flight ~600 s to visibility, delayed ~600 s; the expired one shows how long ago
        assert "inflight" in lines["inflight"] and ("10m" in lines["inflight"] or "9m" in lines["inflight"])
        assert "delayed" in lines["delayed"] and ("10m" in lines["delayed"] or "9m" in lines["delayed"])
        assert "expired" in lines["expired"] and "ago" in lines["expired"]
        # receive counts (the RD column): 2 for the one received twice, 1 in flight, 0 ready
        assert lst.details[ids["expired"]].redeliveries == 2
        assert lst.details[ids["inflight"]].redeliveries == 1
        assert lst.details[ids["ready1"]].redeliveries == 0

        # peek: the body and the receive count, and nothing changes in Redis
        before = r.hgetall(f"{ns}:jobs:Q")
        lst.cursor = [m.id for m in lst.messages].index(ids["expired"])
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, PeekScreen)
        await pilot.pause(0.2)
        await settle(pilot)
        text = screen_text(app)
        assert "crashed twice" in text and "2 time(s)" in text
        assert r.hgetall(f"{ns}:jobs:Q") == before
        await pilot.press("escape")
        await settle(pilot)

        # requeue the in-flight one: Redis re-scores it to now, rc kept
        lst = app.screen.query_one(MessageList)
        lst.cursor = [m.id for m in lst.messages].index(ids["inflight"])
        score_before = r.zscore(f"{ns}:jobs", ids["inflight"])
        await pilot.press("r")
        await settle(pilot)
        if app.screen.__class__.__name__.endswith("ConfirmScreen"):
            await pilot.press("y")
            await settle(pilot)
        t_sec, t_us = r.time()
        now_ms = t_sec * 1000 + t_us // 1000
        score_after = r.zscore(f"{ns}:jobs", ids["inflight"])
        assert score_after < score_before and score_after <= now_ms
        assert r.hget(f"{ns}:jobs:Q", ids["inflight"] + ":rc") == b"1"
        out = qconsole("stats", url, "--json", "-q", "jobs")
        import json

        q = json.loads(out.stdout)["queues"][0]
        assert (q["ready"], q["inflight"], q["expired"], q["delayed"]) == (2, 0, 2, 1)


async def test_mixed_session_shows_a_file_root_and_a_redis_target(pyrsmq, url, tmp_path) -> None:
    from qconsole.screens.root_screen import RootScreen

    four_states(pyrsmq)
    droot, _vroot = build_fixture(str(tmp_path))
    app = make_app([droot, url])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RootScreen)
        assert {k.split(":", 1)[1] for k in screen.scans if k.startswith("0:")} == {"emails", "reports", "thumbnails"}
        assert [k for k in screen.scans if k.startswith("1:")] == ["1:jobs"]
        cells = [c.strip() for c in row_of(screen, "jobs", 1)]
        assert cells[1].endswith("(rsmq)")  # several roots at 120 columns: the row's root (8543157)
        assert cells[2:6] == ["2", "1", "1", "1"]
        text = screen_text(app)
        assert " w/d " in text  # writing (ddmq) and delayed (RSMQ) share the column
        qs = await open_queue(pilot, "jobs", 1)
        assert len(qs.query_one("MessageList").messages) == 5


async def test_queue_screen_shows_and_peeks_a_member_that_is_not_utf8(pyrsmq, url, r, ns) -> None:
    """Anyone can ZADD a member of any bytes: the list shows it escaped, peek reads its body."""
    from qconsole.screens.message_list import MessageList
    from qconsole.screens.peek_screen import PeekScreen

    ids = four_states(pyrsmq)
    r.zadd(f"{ns}:jobs", {b"\xff\xfe": 1, b"ok\xc3": 2})
    r.hset(f"{ns}:jobs:Q", mapping={b"\xff\xfe": b"planted body", b"ok\xc3": b"other"})
    app = make_app([url])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        qs = await open_queue(pilot, "jobs", 0)
        lst = qs.query_one(MessageList)
        assert {m.id for m in lst.messages} == {*ids.values(), "\udcff\udcfe", "ok\udcc3"}
        text = screen_text(app)
        assert "\\xff\\xfe" in text and "ok\\xc3" in text and "\udcff" not in text
        lst.cursor = [m.id for m in lst.messages].index("\udcff\udcfe")
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, PeekScreen)
        await pilot.pause(0.2)
        await settle(pilot)
        assert "planted body" in screen_text(app)


def test_open_takes_several_targets_and_refuses_a_bad_one_in_one_line(url, tmp_path) -> None:
    """A target alone that cannot be reached, or one that is no target at all (beside others
    too), is one line and exit 2. (A server down beside other roots opens: the next test.)"""
    droot, _ = build_fixture(str(tmp_path))
    out = qconsole("redis://127.0.0.1:1?ns=x", timeout=30)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "cannot connect" in out.stderr and "Traceback" not in out.stderr
    out = qconsole(droot, "redis://127.0.0.1:1?ns=%ff", timeout=30)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    out = qconsole(droot, str(tmp_path / "missing"), url, timeout=30)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "does not exist" in out.stderr


async def test_a_redis_server_down_beside_a_file_root_opens_and_is_read_once_it_answers(tmp_path) -> None:
    """`qconsole /shared/queues redis://host` with the Redis server down refused to open at all
    (exit 2): the operator could not even see the file queues. The session opens; the root
    screen says why the Redis target shows nothing, and shows its queues once it answers."""
    import shutil
    import subprocess

    from qconsole.cli.tui import open_targets
    from qconsole.ops import Operations
    from qconsole.screens.app import QConsoleApp
    from qconsole.screens.root_screen import RootScreen
    from redis_peer import free_port

    droot, _ = build_fixture(str(tmp_path))
    port = free_port()
    target = f"redis://127.0.0.1:{port}?ns=late"
    handles = open_targets([droot, target], None, "auto")
    app = QConsoleApp(handles, interval=0, live_countdown=False, audit_log=os.devnull)
    server = None
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, RootScreen)
            assert {k.split(":", 1)[1] for k in screen.scans if k.startswith("0:")} == {"emails", "reports", "thumbnails"}
            assert not [k for k in screen.scans if k.startswith("1:")]
            assert "cannot connect" in " ".join(screen_text(app).split())
            server = subprocess.Popen([shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
                                       "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
            for _ in range(100):
                try:
                    Operations(open_target(target), audit_log=os.devnull).create_queue("jobs")
                    break
                except Exception:  # noqa: BLE001 (not listening yet)
                    time.sleep(0.05)
            screen.rescan()
            await settle(pilot)
            assert [k for k in screen.scans if k.startswith("1:")] == ["1:jobs"]
            assert "cannot connect" not in " ".join(screen_text(app).split())
    finally:
        for h in handles:
            h.close()
        if server is not None:
            server.terminate()
            server.wait(10)


async def test_clearing_an_rsmq_setting_is_refused_as_it_is_typed(pyrsmq, url, r, ns) -> None:
    """The form said '1 to remove' and the save was then refused: RSMQ settings cannot be unset."""
    pyrsmq.createQueue(qname="jobs", vt=8).execute()
    app = make_app([url])
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await open_queue(pilot, "jobs", 0)
        await pilot.press("s")
        await settle(pilot)
        box = app.screen.query_one("#queue--vt")
        assert box.value == "8"
        box.value = ""
        await pilot.pause()
        status = str(app.screen.query_one("#serror").content)
        assert box.has_class("invalid") and "cannot be removed; give a value" in status, status
    assert r.hget(f"{ns}:jobs:Q", "vt") == b"8"
