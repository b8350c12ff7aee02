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
DURATION = 22.0
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
    assert len(ops) >= 15, len(ops)
