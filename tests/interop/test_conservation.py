"""Conservation under load: real vsqs producers and consumers in subprocesses while qconsole
publishes, requeues (--all) and moves between the same queues. Every payload published by
anyone is consumed at least once; no qconsole temp or claim file is left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from qconsole.backends.fs.listing import QC_TEMP_PREFIX
from qconsole.ops import Operations
from qconsole.backends import open_target as Root

HERE = os.path.dirname(os.path.dirname(__file__))  # tests/, where the worker lives
WORKER = os.path.join(HERE, "ops_vsqs_worker.py")
PER_PRODUCER = 1200
PRODUCERS = 2


@pytest.mark.slow
def test_vsqs_conservation_with_live_clients(tmp_path):
    root = str(tmp_path / "root")
    for q in ("a", "b"):
        os.makedirs(os.path.join(root, q))
    stop = str(tmp_path / "stop")
    outs = [str(tmp_path / f"consumed-{i}.txt") for i in range(2)]
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    producers = [
        subprocess.Popen([sys.executable, WORKER, "producer", root, q, f"p{i}", str(PER_PRODUCER)], env=env)
        for i, q in enumerate(("a", "b"))
    ]
    consumers = [subprocess.Popen([sys.executable, WORKER, "consumer", root, out, stop, "a", "b"], env=env)
                 for out in outs]
    ops = Operations(Root(root, "vsqs"), audit_log=str(tmp_path / "audit.log"))
    published: set[str] = set()
    counts = {"publish": 0, "requeue": 0, "move": 0, "messages_requeued": 0, "messages_moved": 0,
              "skipped": 0}
    i = 0
    try:
        while any(p.poll() is None for p in producers) or i < 30:
            batch = [f"q-{i}-{k}" for k in range(10)]
            ops.publish("a" if i % 2 else "b", [s.encode() for s in batch])
            published.update(batch)
            counts["publish"] += 1
            r = ops.requeue("a" if i % 2 else "b", all_held=True)
            counts["requeue"] += 1
            counts["messages_requeued"] += len(r.done)
            counts["skipped"] += len(r.skipped)
            src, dst = ("a", "b") if i % 3 else ("b", "a")
            m = ops.move(src, dst, all_=True) if i % 4 == 0 else ops.move(src, dst, state="ready")
            counts["move"] += 1
            counts["messages_moved"] += len(m.done)
            counts["skipped"] += len(m.skipped)
            i += 1
            time.sleep(0.02)
        for p in producers:
            assert p.wait(timeout=60) == 0
    finally:
        open(stop, "w").close()
        for c in consumers:
            try:
                c.wait(timeout=90)
            except subprocess.TimeoutExpired:
                c.kill()
    assert all(c.returncode == 0 for c in consumers)
    produced = {f"p{i}-{k}" for i in range(PRODUCERS) for k in range(PER_PRODUCER)}
    consumed: list[str] = []
    for out in outs:
        with open(out) as fh:
            consumed.extend(line.rstrip("\n") for line in fh)
    missing = (produced | published) - set(consumed)
    assert not missing, f"{len(missing)} payloads never consumed, e.g. {sorted(missing)[:5]}"
    leftovers = [n for q in ("a", "b") for n in os.listdir(os.path.join(root, q))
                 if n.startswith(QC_TEMP_PREFIX) or n.endswith(".new")]
    assert not leftovers
    sys.stderr.write(
        f"\nconservation: {len(produced)} by vsqs producers + {len(published)} by qconsole; "
        f"{len(consumed)} deliveries ({len(consumed) - len(set(consumed))} redeliveries); "
        f"qconsole ops {counts}\n"
    )
