"""stats --watch on a Redis whose server restarts: the watch says so once and goes on counting."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from redis_peer import RedisServer
from running_lines import RunningLines


def test_a_watch_outlives_a_redis_restart(tmp_path):
    server = RedisServer(tmp_path / "redis")  # its own server: this test stops it
    try:
        import redis

        client = redis.Redis(unix_socket_path=server.sock)
        client.sadd("rsmq:QUEUES", "jobs")
        client.hset("rsmq:jobs:Q", mapping={"vt": 30, "delay": 0, "maxsize": 65536, "totalrecv": 0,
                                            "totalsent": 0, "created": 1, "modified": 1})
        client.close()
        exe = str(Path(sys.executable).with_name("qconsole"))
        watch = RunningLines([exe, "stats", "--watch", "0.2", "--json", server.url()],
                             {**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            watch.wait_for(lambda: len(watch.out) >= 2)
            assert [q["name"] for q in json.loads(watch.out[-1])["queues"]] == ["jobs"]
            server.stop()
            watch.wait_for(lambda: len(watch.err) >= 1)
            assert "still watching" in watch.err[0] and watch.err[0].count("\n") == 1, watch.err
            server.start()  # back, empty (no persistence): the watch sees a namespace without queues
            watch.wait_for(lambda: watch.err[-1] == "qconsole: scanning again\n")
            watch.wait_for(lambda: json.loads(watch.out[-1])["totals"]["queues"] == 0)
            # a line when it went down (another if the failure changed: refused, then reset...), one back
            assert all("still watching" in line for line in watch.err[:-1]) and len(watch.err) <= 3, watch.err
        finally:
            assert watch.stop(signal.SIGINT) == 0
    finally:
        server.stop()
