"""A real client's consumer between ``qconsole ls --ids`` and a change that reads ``-``.

    python consume_between.py LAYOUT ROOT MODE K GONE  < ids  > ids

Reads every id first (so the listing is complete), then takes K messages away by the queue
client's own calls, writes their ids to the file GONE, and passes every listed id on,
unchanged, as if the listing had reached the change a moment later on a live queue.

MODE ``ack``: the first K ids are held messages; the consumer holding them acks (deletes)
them. MODE ``take``: the consumer receives the K oldest ready messages and acks them. MODE
``qconsole``: another operator deletes the first K with ``qconsole delete`` (for vsqs in place
of ``ack``: vsqs 0.3's ``delete(id)`` of a message another process received compares whole
paths to the bare id and unlinks nothing).
Queue ``jobs``; ROOT is a directory (vsqs, ddmq) or a redis:// URL with ``?ns=`` (rsmq).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from peers import ddmq_module, vsqs_manager  # noqa: E402


def vsqs(root: str, mode: str, ids: list[str], k: int) -> list[str]:
    manager = vsqs_manager(root)
    try:
        q = manager.get_queue("jobs")
        gone = []
        for _ in range(k):
            mid = q.receive(visibility_timeout=60, timeout=5)[0]
            q.delete(mid)
            gone.append(str(mid))
        return gone
    finally:
        manager.close()


def ddmq(root: str, mode: str, ids: list[str], k: int) -> list[str]:
    b = ddmq_module().broker(root)
    gone = []
    for i in range(k):
        if mode == "ack":
            name = next(n for n in os.listdir(os.path.join(root, "jobs", "work")) if n.endswith("ddmq" + ids[i]))
            mid = ids[i]
        else:
            msg = b.consume("jobs", n=1, clean=False)
            name, mid = msg.filename, msg.id
        assert b.ack("jobs", msg_files=[name], requeue=False, clean=False) == [name]
        gone.append(mid)
    return gone


def rsmq(url: str, mode: str, ids: list[str], k: int) -> list[str]:
    from rsmq import RedisSMQ

    parts = urlsplit(url)
    client = RedisSMQ(host=parts.hostname, port=parts.port, ns=parse_qs(parts.query)["ns"][0])
    gone = []
    for i in range(k):
        mid = ids[i] if mode == "ack" else client.receiveMessage(qname="jobs", vt=60, quiet=True).execute()["id"]
        assert client.deleteMessage(qname="jobs", id=mid).execute()
        gone.append(mid)
    return gone


def other_operator(root: str, ids: list[str], audit: str) -> list[str]:
    qc = os.path.join(os.path.dirname(sys.executable), "qconsole")
    subprocess.run([qc, "delete", "jobs", *ids, "--yes", "--no-trash", "-r", root, "--audit-log", audit],
                   check=True, stdout=subprocess.DEVNULL)
    return ids


def main() -> None:
    layout, root, mode, k, gone_file = sys.argv[1:]
    ids = sys.stdin.read().splitlines()
    with contextlib.redirect_stdout(sys.stderr):  # ddmq prints its warnings: not into the pipe
        if mode == "qconsole":
            gone = other_operator(root, ids[:int(k)], gone_file + ".audit")
        else:
            gone = {"vsqs": vsqs, "ddmq": ddmq, "rsmq": rsmq}[layout](root, mode, ids, int(k))
    with open(gone_file, "w") as fh:
        fh.write("".join(f"{g}\n" for g in gone))
    sys.stdout.write("".join(f"{i}\n" for i in ids))


if __name__ == "__main__":
    main()
