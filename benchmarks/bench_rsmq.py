#!/usr/bin/env python3
"""How cheap are qconsole's RSMQ counts on a big namespace, and how long does the server block?

Starts a private ``redis-server`` (no persistence, a free loopback port), fills one namespace
with N messages (default 1,000,000) across a few queues in rsmq's exact key format (ids from
Redis TIME, scores in ms) and a realistic mix of states (ready, in flight, expired, delayed),
then measures in the same run, each as the median of several refreshes:

* qconsole: ``RsmqBackend.scan()`` -- what ``stats`` and every root-screen refresh does;
* rsmq's own ``getQueueAttributes`` (Node rsmq 0.12.4) over every queue, timed in-process --
  the fast figure rsmq offers (total and hidden only: no ready/expired/in-flight/delayed split);
* a naive per-message scan: every member with its score by ZRANGE and every message's ``:rc``
  by HMGET, one command per message, pipelined 1000 at a time (what splitting all states
  "by hand" costs);
* the one-command naive form (``ZRANGE 0 -1`` + ``HGETALL``), for the server block it causes.

For each, the longest single command the server ran (SLOWLOG of every command over 0.2 ms,
reset before each method; 0 when none took that long). Run: ``.venv/bin/python benchmarks/bench_rsmq.py [--messages N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import socket
import statistics
import string
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

#: share of messages per state (the rest is ready)
INFLIGHT, EXPIRED, DELAYED = 0.05, 0.03, 0.02
QUEUES = 4
ID_CHARS = string.ascii_letters + string.digits


def b36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fill(r, ns: str, total: int) -> list[str]:
    """N messages in rsmq's format across QUEUES queues (one holding half of them)."""
    sec, usec = r.time()
    now_ms = sec * 1000 + usec // 1000
    sizes = [total // 2] + [total // 2 // (QUEUES - 1)] * (QUEUES - 1)
    sizes[-1] += total - sum(sizes)
    names = [f"q{i}" for i in range(QUEUES)]
    rnd = random.Random(1)
    base_us = (sec - 3600) * 1_000_000
    for name, n in zip(names, sizes):
        hkey, zkey = f"{ns}:{name}:Q", f"{ns}:{name}"
        r.hset(hkey, mapping={"vt": 30, "delay": 0, "maxsize": 65536, "created": sec - 3600, "modified": sec - 3600,
                              "totalsent": n, "totalrecv": 0})
        r.sadd(f"{ns}:QUEUES", name)
        pipe = r.pipeline(transaction=False)
        recv = 0
        for i in range(n):
            us = base_us + i * 3000
            mid = b36(us) + "".join(rnd.choice(ID_CHARS) for _ in range(22))
            x = rnd.random()
            fields = {mid: '{"job": %d, "payload": "%s"}' % (i, "x" * 40)}
            if x < INFLIGHT:
                score = now_ms + rnd.randint(1000, 600_000)
                fields.update({mid + ":rc": rnd.choice((1, 1, 1, 2, 3)), mid + ":fr": now_ms - 1000})
                recv += 1
            elif x < INFLIGHT + EXPIRED:
                score = now_ms - rnd.randint(1000, 600_000)
                fields.update({mid + ":rc": rnd.choice((1, 2, 5)), mid + ":fr": now_ms - 700_000})
                recv += 1
            elif x < INFLIGHT + EXPIRED + DELAYED:
                score = now_ms + rnd.randint(1000, 3_600_000)
            else:
                score = us // 1000
            pipe.hset(hkey, mapping=fields)
            pipe.zadd(zkey, {mid: score})
            if len(pipe) >= 20_000:
                pipe.execute()
        pipe.execute()
        r.hset(hkey, "totalrecv", recv)
    return names


def slowlog_reset(r) -> None:
    r.slowlog_reset()
    r.config_resetstat()


def costliest_mean_us(r) -> tuple[float, str]:
    """The command with the highest mean server time per call (INFO commandstats), which unlike
    SLOWLOG's maximum is not one unlucky moment when the machine preempted the server."""
    stats = {k: v for k, v in r.info("commandstats").items() if not k.startswith(("cmdstat_slowlog", "cmdstat_config",
                                                                                   "cmdstat_info"))}
    if not stats:
        return 0.0, ""
    name, v = max(stats.items(), key=lambda kv: kv[1]["usec_per_call"])
    return float(v["usec_per_call"]), name.removeprefix("cmdstat_")


def _name(cmd) -> str:
    return cmd.decode(errors="replace") if isinstance(cmd, bytes) else str(cmd)


def blocks(r) -> tuple[int, str, float, str]:
    return (*longest_block_us(r), *costliest_mean_us(r))


def longest_block_us(r) -> tuple[int, str]:
    entries = [e for e in r.slowlog_get(100_000) if not _name(e["command"]).upper().startswith("SLOWLOG")]
    if not entries:
        return 0, ""
    top = max(entries, key=lambda e: e["duration"])
    return int(top["duration"]), _name(top["command"])[:60]


SERVER_PID = 0


def server_cpu_s() -> float:
    """CPU seconds the redis-server process has used (user + system): unlike wall times, not
    inflated when a busy machine preempts the server."""
    with open(f"/proc/{SERVER_PID}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CPU: dict[str, tuple[float, float]] = {}


def median_time(fn, rounds: int, name: str = "", warm: bool = True) -> float:
    """Median wall time of ``fn``; the mean server and client CPU per call go to CPU[name]."""
    if warm:
        fn()
    times = []
    s0, c0 = server_cpu_s(), time.process_time()
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    CPU[name] = ((server_cpu_s() - s0) / rounds, (time.process_time() - c0) / rounds)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import redis

    from qconsole.backends import open_target

    exe = shutil.which("redis-server")
    if not exe:
        print("redis-server is not on PATH", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="bench-rsmq-")
    port = free_port()
    global SERVER_PID
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", work, "--slowlog-log-slower-than", "200", "--slowlog-max-len", "100000"],
                            stdout=subprocess.DEVNULL)
    SERVER_PID = proc.pid
    try:
        r = redis.Redis(port=port, protocol=2)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        ns = "bench"
        t0 = time.perf_counter()
        names = fill(r, ns, args.messages)
        print(f"filled {args.messages:,} messages in {len(names)} queues in {time.perf_counter() - t0:.1f} s "
              f"(used_memory {r.info('memory')['used_memory_human']})")
        url = f"redis://127.0.0.1:{port}?ns={ns}"
        backend = open_target(url)
        results = {}

        slowlog_reset(r)
        scan_holder = {}
        results["qconsole scan()"] = median_time(lambda: scan_holder.update(s=backend.scan()), args.rounds,
                                                "qconsole scan()")
        results["qconsole scan()"] = (results["qconsole scan()"], *blocks(r))
        scan = scan_holder["s"]
        totals = scan.totals()
        print("qconsole counts: " + ", ".join(f"{k} {totals[k]:,}" for k in ("ready", "inflight", "expired", "delayed", "total"))
              + " (" + ", ".join(f"{q.name}: {q.extras['counted']}" for q in scan.queues) + ")")

        node_script = os.path.join(HERE, "bench_rsmq_attrs.js")
        if shutil.which("node") and os.path.isdir(os.path.join(HERE, "..", "tests", "node", "node_modules", "rsmq")):
            slowlog_reset(r)
            s0 = server_cpu_s()
            out = subprocess.run(["node", node_script, json.dumps({"host": "127.0.0.1", "port": port, "ns": ns}),
                                  json.dumps(names), str(args.rounds)], capture_output=True, text=True, timeout=600)
            if out.returncode == 0:
                doc = json.loads(out.stdout.splitlines()[0])
                results["rsmq getQueueAttributes (Node)"] = (doc["median_s"], *blocks(r))
                CPU["rsmq getQueueAttributes (Node)"] = ((server_cpu_s() - s0) / (args.rounds + 1), float("nan"))
                print(f"rsmq getQueueAttributes: msgs {doc['msgs']:,}, hiddenmsgs {doc['hiddenmsgs']:,} "
                      "(no ready/expired/in-flight/delayed split)")
            else:
                print("node getQueueAttributes failed:", out.stderr.strip()[:200])
        else:
            print("node or tests/node/node_modules missing: `npm ci` in tests/node for rsmq's own figure")

        def naive_per_message() -> None:
            for name in names:
                zkey, hkey = f"{ns}:{name}", f"{ns}:{name}:Q"
                n = r.zcard(zkey)
                for start in range(0, n, 10_000):
                    members = r.zrange(zkey, start, start + 9_999, withscores=True)
                    pipe = r.pipeline(transaction=False)
                    for m, _s in members:
                        pipe.hmget(hkey, m + b":rc")
                    pipe.execute()

        slowlog_reset(r)
        results["naive per-message (pipelined)"] = (median_time(naive_per_message, 1, "naive per-message (pipelined)",
                                                               warm=False),
                                                   *blocks(r))

        def naive_one_command() -> None:
            for name in names:
                r.zrange(f"{ns}:{name}", 0, -1, withscores=True)
                r.hgetall(f"{ns}:{name}:Q")

        slowlog_reset(r)
        results["naive ZRANGE 0 -1 + HGETALL"] = (median_time(naive_one_command, 1, "naive ZRANGE 0 -1 + HGETALL",
                                                             warm=False), *blocks(r))

        base = results["qconsole scan()"][0]
        print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (SLOWLOG durations are wall time)")
        print(f"\n{'method':32} {'per refresh':>11} {'vs qconsole':>11} {'longest block':>13} {'costliest mean':>15}  commands")
        for name, (secs, block, cmd, mean, mean_cmd) in results.items():
            print(f"{name:32} {secs * 1000:9.1f}ms {secs / base:10.2f}x {block / 1000:11.2f}ms {mean / 1000:13.3f}ms"
                  f"  longest: {cmd[:40]}; costliest per call: {mean_cmd}")
        print(f"\n{'method':32} {'server CPU per refresh':>22} {'client CPU per refresh':>22}")
        for name, (server, client) in CPU.items():
            print(f"{name:32} {server * 1000:20.0f}ms {client * 1000:20.0f}ms")
        backend.close()
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
