"""A VSQS number is the canonical decimal: vsqs 0.3 int()s a name's parts and renames by
str(int(...)), so a planted name with a leading zero is listed by it and never delivered or
requeued. qconsole counts such names foreign, says why, and never acts on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

QC = [sys.executable, "-m", "qconsole"]


def _us(t: float) -> int:
    return int(t * 1_000_000)


def test_names_with_a_leading_zero_are_foreign_as_the_client_never_acts_on_them(vsqs_root):
    root, manager = vsqs_root
    q = manager.get_queue("jobs")
    qdir = os.path.join(root, "jobs")
    now = time.time()
    zero_ready = "0" + str(_us(now - 60))[1:]  # same width as a real id
    zero_held = f"{_us(now - 50)}.0{str(_us(now - 40))[1:]}"  # expired, by its digits
    for name in (zero_ready, zero_held):
        with open(os.path.join(qdir, name), "w") as fh:
            fh.write("planted")
    q.publish(b"real")
    # the client: delivers the real message only, and never requeues the expired planted one
    assert q.receive(visibility_timeout=300, timeout=1)[1] == b"real"
    assert q.receive(visibility_timeout=300, timeout=0.3) == (None, None)
    assert sorted(n for n in os.listdir(qdir) if n.startswith("0") or ".0" in n) == sorted([zero_ready, zero_held])

    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    res = subprocess.run([*QC, "stats", root, "--json"], capture_output=True, text=True, env=env, timeout=60)
    doc = json.loads(res.stdout)
    (jobs,) = doc["queues"]
    assert jobs["foreign"] == 2 and jobs["ready"] == 0 and jobs["expired"] == 0
    assert jobs["inflight"] == 1  # the real one, received above
    assert sum("leading zero" in e for e in jobs["errors"]) == 2, jobs["errors"]
    # a requeue of the expired leaves the planted name alone (the client would never take it back)
    res = subprocess.run([*QC, "requeue", "jobs", "--expired", "-r", root, "--audit-log",
                          os.path.join(root, "..", "audit.log")], capture_output=True, text=True, env=env, timeout=60)
    assert zero_held in os.listdir(qdir), res.stderr
