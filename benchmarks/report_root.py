"""Build a big ddmq root fast for ``bench_report.py``: the files ddmq writes, by os.open/write.

4 queues (one holding 70 % of the messages), 2 % of each queue consumed (in ``work/`` with a
deadline), requeue counters 0-5, payloads drawn from n/2 texts (so some are duplicates),
creation times spread over the last ~4 hours (every qshape bucket gets some).

    .venv/bin/python benchmarks/report_root.py DIR --messages 1000000
"""

from __future__ import annotations

import argparse
import os
import random
import time

SHARES = {"big": 0.70, "orders": 0.15, "mail": 0.10, "audit": 0.05}
#: json.dumps of ddmq's message dict, key order and spacing as the client writes it
_DOC = ('{"message": "%s", "priority": 999, "queue_number": "%s", "id": "%s", "queue": "%s", '
        '"timeout": null, "requeue": false, "requeue_counter": %d, "requeue_limit": null, "filename": "%s"}')


def build_root(root: str, n: int, seed: int = 7) -> None:
    """A ddmq root of ``n`` messages under ``root`` (which must not exist)."""
    os.makedirs(root)
    open(os.path.join(root, "ddmq.yaml"), "w").close()
    rnd = random.Random(seed)
    now = time.time()
    deadline = int(now) + 3600
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    for q, share in SHARES.items():
        qdir = os.path.join(root, q)
        os.makedirs(os.path.join(qdir, "work"))
        open(os.path.join(qdir, "ddmq.yaml"), "w").close()
        getbits, randrange, random_ = rnd.getrandbits, rnd.randrange, rnd.random
        rcs = (0, 0, 0, 0, 1, 2, 3, 5)
        for i in range(int(n * share)):
            created = now - 4 * 3600 * random_() ** 2  # more young than old, as a live backlog
            qn = "%.6f" % created
            qn = qn.replace(".", "")
            uid = "%032x" % getbits(128)
            rc = rcs[i & 7]
            if i % 50 == 0:
                fname = "%d.999.%s.ddmq%s" % (deadline, qn, uid)
                path = "%s/work/%s" % (qdir, fname)
            else:
                fname = "999.%s.ddmq%s" % (qn, uid)
                path = "%s/%s" % (qdir, fname)
            data = _DOC % ("payload-%d" % randrange(n // 2 or 1), qn, uid, q, rc, fname)
            fd = os.open(path, flags, 0o644)
            os.write(fd, data.encode())
            os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("--messages", type=int, default=100_000)
    args = ap.parse_args()
    t = time.perf_counter()
    build_root(args.root, args.messages)
    print(f"built {args.messages} messages in {time.perf_counter() - t:.1f}s: {args.root}")


if __name__ == "__main__":
    main()
