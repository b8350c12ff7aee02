"""Test helper processes for the multi-operator stress test.

producer LAYOUT ROOT QUEUE TAG N          real client publishes N payloads "<TAG>-<i>"
consumer LAYOUT ROOT OUT STOP Q1 [Q2..]   real client receives; logs each payload to OUT
                                          *before* acknowledging 85% of them (the rest stay
                                          held, as a crashed worker leaves them); exits
                                          once STOP exists
operator ROOT SEED OUT STOP QCONSOLE Q1 Q2 runs qconsole commands at random (purge, trash
                                          restore of the newest or a random batch, requeue
                                          --all, move) until STOP exists; one JSON line per
                                          command to OUT
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import warnings

warnings.simplefilter("ignore")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/ for peers


def produce(layout: str, root: str, queue: str, tag: str, n: int) -> None:
    if layout == "vsqs":
        from vsqs.queue import QueueManager

        m = QueueManager(root)
        q = m.get_queue(queue)
        for i in range(n):
            q.publish(f"{tag}-{i}".encode())
            if i % 50 == 0:
                time.sleep(0.01)
        m.close()
        return
    from peers import ddmq_module

    b = ddmq_module().broker(root)
    for i in range(n):
        b.publish(queue, f"{tag}-{i}", clean=False)
        if i % 50 == 0:
            time.sleep(0.01)


def consume(layout: str, root: str, out: str, stop: str, queues: list[str]) -> None:
    rng = random.Random(os.getpid())
    with open(out, "a") as fh:
        if layout == "vsqs":
            from vsqs.queue import QueueManager

            m = QueueManager(root)
            qs = [m.get_queue(name) for name in queues]
            while not os.path.exists(stop):
                got = False
                for q in qs:
                    try:
                        mid, data = q.receive(visibility_timeout=2, timeout=0.02)
                    except Exception:  # qconsole moved/purged it between vsqs's rename and open
                        continue
                    if mid is None:
                        continue
                    got = True
                    fh.write(data.decode() + "\n")
                    fh.flush()
                    time.sleep(0.004)  # slower than the producers: the queues fill up
                    if rng.random() < 0.85:
                        try:
                            q.delete(mid)
                        except Exception:
                            pass
                if not got:
                    time.sleep(0.01)
            m.close()
            return
        from peers import ddmq_module

        b = ddmq_module().broker(root)
        while not os.path.exists(stop):
            got = False
            for qn in queues:
                try:
                    msg = b.consume(qn, clean=False)
                except Exception:  # a half-written body, a file taken meanwhile
                    continue
                if msg is None:
                    continue
                got = True
                fh.write(str(msg.message) + "\n")
                fh.flush()
                time.sleep(0.004)
                if rng.random() < 0.85:
                    try:
                        b.ack(qn, msg.filename, clean=False)
                    except Exception:
                        pass
            if not got:
                time.sleep(0.01)


def operate(root: str, seed: int, out: str, stop: str, qconsole: str, queues: list[str]) -> None:
    rng = random.Random(seed)
    a, b = queues
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    env.update(QCONSOLE_ROOT=root, PYTHONWARNINGS="ignore")

    def qc(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([qconsole, *argv], capture_output=True, text=True, env=env, timeout=60)

    with open(out, "a") as fh:
        while not os.path.exists(stop):
            pick = rng.random()
            src, dst = (a, b) if rng.random() < 0.5 else (b, a)
            if pick < 0.25:
                argv = ["purge", src, "--yes"]
            elif pick < 0.45:
                argv = ["trash", "restore"]
            elif pick < 0.55:
                listed = qc("trash", "list", "--json")
                try:
                    batches = [x["batch"] for x in json.loads(listed.stdout)]
                except ValueError:
                    batches = []
                argv = ["trash", "restore", rng.choice(batches)] if batches else ["trash", "restore"]
            elif pick < 0.75:
                argv = ["requeue", src, "--all"]
            elif pick < 0.9:
                argv = ["move", src, dst, "--all"]
            else:
                argv = ["move", src, dst, "--state", "ready"]
            started = time.monotonic()
            r = qc(*argv)
            fh.write(json.dumps({"argv": argv, "code": r.returncode, "stdout": r.stdout[-300:],
                                 "stderr": r.stderr[-600:], "s": round(time.monotonic() - started, 3)}) + "\n")
            fh.flush()


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "producer":
        produce(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    elif what == "consumer":
        consume(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:])
    else:
        operate(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7:])
