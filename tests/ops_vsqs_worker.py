"""Test helper: a real vsqs 0.3 producer or consumer process for the conservation test.

producer ROOT QUEUE TAG N            publish N payloads "<TAG>-<i>"
consumer ROOT OUT STOPFILE Q1 [Q2..] receive from the queues, append each payload to OUT,
                                     delete 85% of them (the rest are "crashed" work: they
                                     expire after 1 s and are redelivered); exit after
                                     STOPFILE appears and the queues stay empty.
"""

from __future__ import annotations

import os
import random
import sys
import warnings

warnings.simplefilter("ignore")

from vsqs.queue import QueueManager  # noqa: E402


def produce(root: str, queue: str, tag: str, n: int) -> None:
    m = QueueManager(root)
    q = m.get_queue(queue)
    for i in range(n):
        q.publish(f"{tag}-{i}".encode())
    m.close()


def consume(root: str, out: str, stop: str, queues: list[str]) -> None:
    m = QueueManager(root)
    qs = [m.get_queue(name) for name in queues]
    rng = random.Random(os.getpid())
    idle = 0
    with open(out, "a") as fh:
        while True:
            got = False
            for q in qs:
                try:
                    mid, data = q.receive(visibility_timeout=1, timeout=0.02)
                except OSError:  # qconsole requeued/moved it between vsqs's rename and open
                    continue
                if mid is None:
                    continue
                got = True
                fh.write(data.decode() + "\n")
                fh.flush()
                if rng.random() < 0.85:
                    try:
                        q.delete(mid)
                    except OSError:
                        pass
            if got:
                idle = 0
                continue
            idle += 1
            if os.path.exists(stop) and idle > 60:
                if not any(n[0].isdigit() for qn in queues for n in os.listdir(os.path.join(root, qn))):
                    break
    m.close()


if __name__ == "__main__":
    if sys.argv[1] == "producer":
        produce(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        consume(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
