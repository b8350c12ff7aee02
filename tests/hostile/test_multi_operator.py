"""Several operators at once (issue 9, class 3): three qconsole processes purge, restore the
trash (newest or a random batch), requeue and move on the same two queues while real vsqs 0.3
or ddmq 0.9.14 producers and consumers run. Afterwards every payload ever published is
either consumed (logged by a consumer before its ack), live in a queue, or in the trash;
no payload is live as two files; no qconsole leftovers; no qconsole run crashed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

from harness import live_messages, qc_leftovers, qconsole_bin, trashed_messages
from peers import ddmq_broker

HERE = os.path.dirname(__file__)
WORKER = os.path.join(HERE, "stress_worker.py")
#: seconds the operators run beside the clients (per layout)
DURATION = 15.0
PER_PRODUCER = {"vsqs": 1500, "ddmq": 600}
OPERATORS = 3


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_three_operators_with_live_clients(tmp_path, layout):
    root = str(tmp_path / "root")
    queues = ("a", "b")
    if layout == "vsqs":
        for q in queues:
            os.makedirs(os.path.join(root, q))
    else:
        ddmq_broker(root, *queues)
    env = dict(os.environ, PYTHONWARNINGS="ignore", HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path))
    env = {k: v for k, v in env.items() if not k.startswith("QCONSOLE_")}
    stop_ops, stop_consumers = str(tmp_path / "stop-ops"), str(tmp_path / "stop-consumers")
    n = PER_PRODUCER[layout]
    tags = [f"p{i}" for i in range(len(queues))]
    procs: list[subprocess.Popen] = []

    def spawn(*argv: str) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, WORKER, *argv], env=env)
        procs.append(p)
        return p

    consumed_logs = [str(tmp_path / f"consumed-{i}.txt") for i in range(2)]
    op_logs = [str(tmp_path / f"ops-{i}.jsonl") for i in range(OPERATORS)]
    started = time.monotonic()
    try:
        producers = [spawn("producer", layout, root, q, tag, str(n)) for q, tag in zip(queues, tags)]
        for out in consumed_logs:
            spawn("consumer", layout, root, out, stop_consumers, *queues)
        operators = [spawn("operator", root, str(1000 + i), out, stop_ops, qconsole_bin(), *queues)
                     for i, out in enumerate(op_logs)]
        while time.monotonic() - started < DURATION or any(p.poll() is None for p in producers):
            time.sleep(0.2)
            assert time.monotonic() - started < DURATION + 60, "producers never finished"
        open(stop_ops, "w").close()
        for p in operators:
            p.wait(timeout=90)
        open(stop_consumers, "w").close()
        for p in procs:
            p.wait(timeout=60)
    finally:
        for path in (stop_ops, stop_consumers):
            open(path, "a").close()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert all(p.returncode == 0 for p in procs), [p.returncode for p in procs]

    produced = {f"{tag}-{i}" for tag in tags for i in range(n)}
    consumed: set[str] = set()
    for out in consumed_logs:
        if os.path.exists(out):
            with open(out) as fh:
                consumed.update(line.rstrip("\n") for line in fh)
    live = live_messages(root, layout)
    trash = trashed_messages(root, layout)
    ops = [json.loads(line) for out in op_logs if os.path.exists(out) for line in open(out)]
    kinds = Counter(" ".join(o["argv"][:2]) if o["argv"][0] == "trash" else o["argv"][0] for o in ops)
    codes = Counter(o["code"] for o in ops)
    sys.stderr.write(
        f"\n{layout}: {len(produced)} produced, {len(consumed)} consumed, {sum(live.values())} live, "
        f"{sum(trash.values())} in the trash; {len(ops)} qconsole commands by {OPERATORS} operators {dict(kinds)}, "
        f"exit codes {dict(codes)}\n")

    crashed = [o for o in ops if o["code"] not in (0, 1, 2) or "Traceback" in o["stderr"] or "internal error" in o["stderr"]]
    assert not crashed, crashed[:3]
    lost = produced - consumed - set(live) - set(trash)
    assert not lost, f"{len(lost)} payloads lost, e.g. {sorted(lost)[:5]}"
    twice = {k: v for k, v in live.items() if v > 1}
    assert not twice, f"{len(twice)} payloads live as two files, e.g. {list(twice.items())[:5]}"
    assert not qc_leftovers(root), sorted(qc_leftovers(root))[:10]
    assert len(ops) >= 6, len(ops)  # (a loaded machine runs fewer; the targeted races below don't depend on it)


# --------------------------------------------------------------------------- targeted races

N_RACE = 4000


def _fill(root: str, layout: str, queue: str, n: int, tag: str) -> set[str]:
    """``n`` ready messages (half of them in flight/expired for ddmq's work/) written directly."""
    qdir = os.path.join(root, queue)
    os.makedirs(os.path.join(qdir, "work") if layout == "ddmq" else qdir, exist_ok=True)
    payloads = set()
    now = int(time.time())
    for i in range(n):
        text = f"{tag}-{i}"
        payloads.add(text)
        if layout == "vsqs":
            name = str(1_700_000_000_000_000 + i) + (f".{(now - 5) * 1_000_000}" if i % 3 == 0 else "")
            data = text.encode()
        else:
            uid, qn = f"{i:032x}", f"{now - 100}{i:06d}"
            name = f"999.{qn}.ddmq{uid}" if i % 3 else f"work/{now - 5}.999.{qn}.ddmq{uid}"
            data = json.dumps({"message": text, "queue": queue, "timeout": None, "id": uid, "priority": 999,
                               "queue_number": qn, "filename": f"999.{qn}.ddmq{uid}", "requeue": True,
                               "requeue_counter": 0, "requeue_limit": None}).encode()
        with open(os.path.join(qdir, name), "wb") as fh:
            fh.write(data)
    return payloads


def _root(tmp_path, layout: str) -> str:
    root = str(tmp_path / "root")
    if layout == "vsqs":
        for q in ("a", "b"):
            os.makedirs(os.path.join(root, q))
    else:
        ddmq_broker(root, "a", "b")
    return root


def _qc(root: str, *argv: str, tmp_path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    env.update(QCONSOLE_ROOT=root, HOME=str(tmp_path), XDG_STATE_HOME=str(tmp_path), PYTHONWARNINGS="ignore")
    return subprocess.Popen([qconsole_bin(), *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _settle_trash(root: str, tmp_path) -> None:
    """Restore whatever is left in the trash, batch by batch (what an operator would do)."""
    for _ in range(20):
        p = _qc(root, "trash", "restore", tmp_path=tmp_path)
        out, err = p.communicate(timeout=120)
        assert "Traceback" not in err and "internal error" not in err, err
        if p.returncode != 0:
            break


def _account(root: str, layout: str, expected: set[str]) -> None:
    live = live_messages(root, layout)
    trash = trashed_messages(root, layout)
    lost = expected - set(live) - set(trash)
    assert not lost, f"{len(lost)} of {len(expected)} lost, e.g. {sorted(lost)[:5]}"
    twice = {k: v for k, v in live.items() if v > 1}
    assert not twice, f"{len(twice)} live twice, e.g. {list(twice.items())[:5]}"
    assert not qc_leftovers(root), sorted(qc_leftovers(root))[:10]


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_restore_while_a_purge_fills_the_batch(tmp_path, layout):
    """The issue's example: `trash restore` of the newest batch while `purge` is still filling it."""
    root = _root(tmp_path, layout)
    expected = _fill(root, layout, "a", N_RACE, "m")
    purge = _qc(root, "purge", "a", "--yes", tmp_path=tmp_path)
    restores = 0
    while purge.poll() is None:
        r = _qc(root, "trash", "restore", tmp_path=tmp_path)
        out, err = r.communicate(timeout=120)
        assert "Traceback" not in err and "internal error" not in err, err
        restores += 1
    out, err = purge.communicate()
    assert purge.returncode == 0, err
    sys.stderr.write(f"\n{layout}: {restores} restores while one purge of {N_RACE} ran\n")
    _account(root, layout, expected)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_two_restores_and_an_empty_of_one_batch(tmp_path, layout):
    """Restore vs restore of the same batch, then restore vs `trash empty` of another: nothing is
    lost except what `empty` itself deleted, and nothing comes back twice."""
    root = _root(tmp_path, layout)
    expected = _fill(root, layout, "a", N_RACE, "m")
    p = _qc(root, "purge", "a", "--yes", tmp_path=tmp_path)
    assert p.wait(timeout=120) == 0, p.stderr.read()
    restores = [_qc(root, "trash", "restore", tmp_path=tmp_path) for _ in range(2)]
    for r in restores:
        out, err = r.communicate(timeout=120)
        assert r.returncode in (0, 2) and "Traceback" not in err and "internal error" not in err, err
    _account(root, layout, expected)
    # restore vs empty: whatever empty removed is gone on purpose; the rest is live once
    p = _qc(root, "purge", "a", "--yes", tmp_path=tmp_path)
    assert p.wait(timeout=120) == 0, p.stderr.read()
    r, e = _qc(root, "trash", "restore", tmp_path=tmp_path), _qc(root, "trash", "empty", "--yes", tmp_path=tmp_path)
    for proc in (r, e):
        out, err = proc.communicate(timeout=120)
        assert "Traceback" not in err and "internal error" not in err, err
    live = live_messages(root, layout)
    assert not {k: v for k, v in live.items() if v > 1}
    assert not qc_leftovers(root)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_requeue_and_move_of_the_same_queue(tmp_path, layout):
    root = _root(tmp_path, layout)
    expected = _fill(root, layout, "a", N_RACE // 2, "m")
    procs = [_qc(root, "requeue", "a", "--all", tmp_path=tmp_path), _qc(root, "move", "a", "b", "--all", tmp_path=tmp_path),
             _qc(root, "move", "a", "b", "--state", "ready", tmp_path=tmp_path)]
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0 and "Traceback" not in err, err
    _account(root, layout, expected)
