#!/usr/bin/env python3
"""qconsole at scale, in every shape: counting (stats/check) and bulk operations.

Shapes (per layout, VSQS and ddmq):

* ``big``    -- 1,000,000 messages in ONE queue;
* ``many``   -- 100,000 messages in 2,000 queues of 50;
* ``spread`` -- 1,000,000 messages in 20 queues (one holds half, the rest uneven, as
  bench_stats.py builds them).

Each shape mixes ready / in-flight / expired / being-written names as bench_stats.py does.
For every shape these commands run as subprocesses, **interleaved** (one of each per round,
so a noisy neighbour hits all alike), median over ``--reps`` rounds:

* ``find ROOT -type f | wc -l``                 -- the floor every ratio is against;
* the client's own listing: ddmq ``broker.get_message_list`` over every queue, or vsqs 0.3's
  ``Queue._list_messages`` (interpreter start and import included, as for qconsole);
* ``qconsole stats --json ROOT`` and ``qconsole check ROOT``.

Peak RSS is the ``ru_maxrss`` that ``wait4`` reports for each command: the largest single
process among it and the children it waited for (sh/find/wc; qconsole's forked scanners).
``--cold`` also runs each command after ``sync; echo 3 > /proc/sys/vm/drop_caches`` (root
only: said so when refused). Start-up: ``stats --json``, ``check`` and ``ls`` on a tiny root.

Bulk operations (``--bulk``): a fresh tree per round; qconsole's CLI against the client's
own comparable action on the same tree, messages per second:

* ddmq ``requeue --all`` of expired messages vs ``broker.clean(q, force=True)`` (20k, as in
  issue 13, and the bulk size);
* VSQS ``requeue --expired`` vs the client's requeue pass (``Queue._get_oldest_message`` on a
  queue holding only expired messages);
* ``requeue --expired`` of 1k expired messages in a queue of ``--mixed-ready`` waiting ones
  (100k), both layouts, vs the same client calls (a requeue by state lists the held ones only);
* ``purge --yes`` (to the trash, and ``--no-trash``) vs ddmq ``purge_queue`` / a VSQS
  listdir+unlink loop (vsqs 0.3 has no purge and its ``delete`` only works in-process);
* ``move SRC DEST --all`` vs the clients' get/publish/remove loop;
* ``publish -n`` vs the client's own publish called n times (vsqs 0.3 lists the queue per
  message: O(n^2));
* ``trash restore`` vs a bare ``os.rename`` loop;
* ``delete Q ID... --yes`` (trash and ``--no-trash``) vs a listdir+unlink loop, at most
  ``--delete-n`` ids (they go on the command line, which Linux caps at 2 MB);
* ``delete Q - --yes`` and ``move Q DEST -`` with the bulk size's ids on stdin (one a line, as
  ``ls --ids`` prints them) vs the listdir+unlink loop and qconsole's own ``move --all``; ddmq's
  also vs the client's own delete (one ``get_message_list``, ``delete_message`` per id). vsqs
  0.3's ``Queue.delete`` lists the whole queue per id outside the consuming process (O(n^2)),
  so a bare loop is its only comparison at this size.

With ``--baseline QCONSOLE`` each bulk round also times that qconsole (an older checkout's)
on a fresh tree of its own: before/after figures from the same rounds.

Trees are written with os.open/os.write (not the clients: far too slow at 1M) and cached
under ``--cache`` (default /tmp/qc-scale) between runs; stats trees hold empty files (a
scan never opens one). Every bulk run starts from a tree written to disk (``os.sync`` after
the build, both sides), as a live queue's messages are. ``--quick`` shrinks every size for a smoke run.

``--regular`` times a regular (non-editable) install of this checkout, built into a venv of its
own, as an operator installs qconsole; ``--baseline-src DIR`` does the same for the baseline.
An editable install carries setuptools' import finder (~13 ms) in every start.

Run: ``.venv/bin/python benchmarks/bench_scale.py [--quick] [--cold] [--bulk] [--shapes big,many] [--regular]``
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "tests")
sys.path.insert(0, TESTS)  # the PyYAML shim for ddmq (peers.py)

BIN = os.path.dirname(sys.executable)
QCONSOLE = os.path.join(BIN, "qconsole")
#: another qconsole (e.g. an older checkout's) timed in the same rounds (--baseline)
BASELINE: str | None = None

#: share of messages per state (the rest is ready), as bench_stats.py
INFLIGHT, EXPIRED, WRITING = 0.10, 0.05, 0.002

SHAPES = {  # name -> (full sizes, quick sizes) as lists of queue sizes
    "big": (lambda: [1_000_000], lambda: [50_000]),
    "many": (lambda: [50] * 2000, lambda: [50] * 200),
    "spread": (lambda: _spread(1_000_000, 20), lambda: _spread(50_000, 20)),
}
YAML_DEFAULTS = "cleaned: 0\nmessage_timeout: 600\npriority: 999\nrequeue: true\nrequeue_prio: 0\n"


def _spread(total: int, queues: int) -> list[int]:
    """One queue with half the messages, the rest spread unevenly (bench_stats.py's shape)."""
    rnd = random.Random(7)
    big = total // 2
    rest = total - big
    weights = [rnd.uniform(0.5, 1.5) for _ in range(queues - 1)]
    scale = rest / sum(weights)
    sizes = [int(w * scale) for w in weights]
    sizes[-1] += rest - sum(sizes)
    return [big, *sizes]


# --------------------------------------------------------------------------- trees

_FLAGS = os.O_CREAT | os.O_WRONLY | os.O_TRUNC


def _touch(path: str, data: bytes = b"") -> None:
    fd = os.open(path, _FLAGS, 0o644)
    if data:
        os.write(fd, data)
    os.close(fd)


def vsqs_names(n: int, qi: int, now_us: int, rnd: random.Random) -> list[str]:
    base = now_us - n * 1000 - 3_600_000_000
    out = []
    for i in range(n):
        mid = base + i * 1000 + qi
        r = rnd.random()
        if r < INFLIGHT:
            out.append(f"{mid}.{now_us + rnd.randint(3600, 7200) * 1_000_000}")
        elif r < INFLIGHT + EXPIRED:
            out.append(f"{mid}.{now_us - rnd.randint(1, 600) * 1_000_000}")
        elif r < INFLIGHT + EXPIRED + WRITING:
            out.append(f"{mid}.new")
        else:
            out.append(str(mid))
    return out


def ddmq_body(queue: str, text: str, prio: int, qn: str, uid: str, fname: str, requeue: bool = False) -> bytes:
    # exactly ddmq 0.9.14's message.msg2json(): json.dumps(message.__dict__) in its attribute order
    return json.dumps({
        "message": text, "queue": queue, "timeout": None, "id": uid, "priority": prio,
        "queue_number": qn, "filename": fname, "requeue": requeue, "requeue_counter": 0,
        "requeue_limit": None,
    }).encode()


def build(root: str, layout: str, sizes: list[int], *, bodies: bool = False) -> None:
    """A root of ``sizes`` queues in the state mix above (empty files unless ``bodies``)."""
    rnd = random.Random(42)
    now = time.time()
    os.makedirs(root)
    if layout == "ddmq":
        _touch(os.path.join(root, "ddmq.yaml"))
    width = max(2, len(str(len(sizes) - 1)))
    for qi, n in enumerate(sizes):
        q = f"q{qi:0{width}d}"
        qdir = os.path.join(root, q)
        if layout == "vsqs":
            os.mkdir(qdir)
            for name in vsqs_names(n, qi, int(now * 1_000_000), rnd):
                _touch(os.path.join(qdir, name), b'{"job": 1}' if bodies else b"")
            continue
        os.makedirs(os.path.join(qdir, "work"))
        _touch(os.path.join(qdir, "ddmq.yaml"), YAML_DEFAULTS.encode())
        for i in range(n):
            prio = rnd.choice((999, 999, 999, 10, 9, 1))
            qn = str(now - 3600 + i * 0.001).replace(".", "")
            uid = uuid.UUID(int=rnd.getrandbits(128)).hex
            fname = f"{prio}.{qn}.ddmq{uid}"
            r = rnd.random()
            body = ddmq_body(q, f"job {i}", prio, qn, uid, fname) if bodies else b""
            if r < INFLIGHT + EXPIRED:
                dl = int(now) + (rnd.randint(3600, 7200) if r < INFLIGHT else -rnd.randint(1, 600))
                _touch(os.path.join(qdir, "work", f"{dl}.{fname}"), body)
            else:
                _touch(os.path.join(qdir, fname), body)


def cached_tree(cache: str, layout: str, shape: str, sizes: list[int]) -> str:
    """The tree for (layout, shape, sizes), built once and kept under ``cache``."""
    tag = f"{layout}-{shape}-{sum(sizes)}-{len(sizes)}"
    root = os.path.join(cache, "trees", tag)
    marker = root + ".complete"
    if not os.path.exists(marker):
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.perf_counter()
        build(root, layout, sizes)
        open(marker, "w").close()
        print(f"  built {tag} in {time.perf_counter() - t0:.1f}s", flush=True)
    return root


# --------------------------------------------------------------------------- timing


class Result:
    __slots__ = ("secs", "rss_kb", "out", "cpu")

    def __init__(self, secs: float, rss_kb: int, out: bytes, cpu: float = 0.0) -> None:
        self.secs, self.rss_kb, self.out, self.cpu = secs, rss_kb, out, cpu


#: subprocesses may write .pyc files (as an installed qconsole has them), whatever our shell says
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


#: Runs a command for run() and reports its wall time, peak RSS and CPU on a descriptor. Linux
#: keeps, across exec, the largest RSS the process had before it: a command started straight
#: from this (big) benchmark process would report this process's size as its own peak. Forked
#: from this small interpreter instead, it reports its own. (The wrapper's start is not timed.)
_MEASURE = """
import os, sys, time
fd, argv = int(sys.argv[1]), sys.argv[2:]
os.set_inheritable(fd, False)
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
secs = time.perf_counter() - t0
os.write(fd, ("%r %d %r" % (secs, ru.ru_maxrss, ru.ru_utime + ru.ru_stime)).encode())
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run(argv: list[str], *, ok=(0,), env: dict | None = None, stdin: str | None = None) -> Result:
    """Run ``argv`` (``stdin``: a file to read); its wall time, the peak RSS wait4 reports for it
    (the largest of it and the children it waited for) and its CPU time, from _MEASURE."""
    env = BASE_ENV if env is None else {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    rfd, wfd = os.pipe()
    try:
        with tempfile.TemporaryFile() as err, open(stdin or os.devnull, "rb") as fh_in:
            p = subprocess.Popen([sys.executable, "-S", "-c", _MEASURE, str(wfd), *argv], stdin=fh_in,
                                 stdout=subprocess.PIPE, stderr=err, env=env, pass_fds=(wfd,))
            os.close(wfd)
            wfd = -1
            out = p.stdout.read()
            p.stdout.close()
            p.wait()
            with open(rfd, "rb") as fh:
                rfd = -1
                report = fh.read().split()
            if p.returncode not in ok or len(report) != 3:
                err.seek(0)
                raise RuntimeError(f"{argv} -> {p.returncode}: {err.read().decode(errors='replace')[-2000:]}")
    finally:
        for fd in (rfd, wfd):
            if fd >= 0:
                os.close(fd)
    # CPU (user + system) of the command and the children it waited for: on a shared machine
    # wall time swings with the neighbours' load, CPU time much less
    return Result(float(report[0]), int(report[1]), out, float(report[2]))


def drop_caches() -> str | None:
    """None when the page cache was dropped; else why not."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return None
    except OSError as err:
        return f"drop_caches refused: {err.strerror}"


CLIENT_DDMQ = (
    "import sys; sys.path.insert(0, {tests!r})\n"
    "from peers import ddmq_module\n"
    "b = ddmq_module().broker({root!r})\n"
    "n = 0\n"
    "for q in b.list_queues():\n"
    "    w, k = b.get_message_list(q)\n"
    "    n += len(w) + len(k)\n"
    "print(n)\n"
)
CLIENT_VSQS = (
    "import os, types\n"
    "from vsqs.queue import Queue\n"
    "root = {root!r}\n"
    "n = 0\n"
    "for q in sorted(os.listdir(root)):\n"
    "    n += sum(1 for _ in Queue._list_messages(types.SimpleNamespace(path=os.path.join(root, q))))\n"
    "print(n)\n"
)


#: A floor for any pure-Python program on this machine: the interpreter starts (no import),
#: lists every directory a scan must list (the queues, and ddmq's work/) split between two
#: processes as the root allows, counts the names, prints the sum. Nothing parsed, no document
#: written. qconsole's C reader of small queues (backends/fs/_plain.c) makes no string per
#: name, so on a root of many small queues ``stats`` can come in under it.
PY_FLOOR = (
    "import os\n"
    "root = {root!r}\n"
    "dirs = [os.path.join(root, e.name) for e in os.scandir(root) if e.is_dir(follow_symlinks=False)]\n"
    "dirs += [w for w in (os.path.join(d, 'work') for d in dirs) if os.path.isdir(w)]\n"
    "r, w = os.pipe()\n"
    "pid = os.fork() if len(dirs) > 1 else -1\n"
    "n = sum(len(os.listdir(d)) for d in dirs[(pid == 0)::2 if pid >= 0 else 1])\n"
    "if pid == 0:\n"
    "    os.write(w, str(n).encode()); os._exit(0)\n"
    "if pid > 0:\n"
    "    os.close(w); n += int(os.read(r, 64)); os.waitpid(pid, 0)\n"
    "print(n)\n"
)


def count_commands(layout: str, root: str) -> dict[str, list[str]]:
    client = (CLIENT_DDMQ if layout == "ddmq" else CLIENT_VSQS).format(tests=TESTS, root=root)
    return {
        "find": ["sh", "-c", f"find '{root}' -type f | wc -l"],
        "client": [sys.executable, "-c", client],
        "python floor": [os.path.join(os.path.dirname(QCONSOLE), "python"), "-c", PY_FLOOR.format(root=root)],
        "stats": [QCONSOLE, "stats", "--json", root],
        "check": [QCONSOLE, "check", root],
        **({"stats (baseline)": [BASELINE, "stats", "--json", root], "check (baseline)": [BASELINE, "check", root]}
           if BASELINE else {}),
    }


def interleaved(cmds: dict[str, list[str]], reps: int, *, cold: bool = False,
                ok: dict[str, tuple[int, ...]] | None = None) -> dict[str, list[Result]]:
    """One run of every command per round (after a warm-up round unless cold)."""
    ok = ok or {}
    res: dict[str, list[Result]] = {k: [] for k in cmds}
    if not cold:
        for k, argv in cmds.items():
            run(argv, ok=ok.get(k, (0,)))
    for _ in range(reps):
        for k, argv in cmds.items():
            if cold:
                drop_caches()
            res[k].append(run(argv, ok=ok.get(k, (0,))))
    return res


def med(rs: list[Result]) -> float:
    return statistics.median(r.secs for r in rs)


def med_cpu(rs: list[Result]) -> float:
    return statistics.median(r.cpu for r in rs)


def peak(rs: list[Result]) -> float:
    return max(r.rss_kb for r in rs) / 1024


def bench_counts(args: argparse.Namespace, layout: str, shape: str, cold: bool) -> dict:
    sizes = SHAPES[shape][1 if args.quick else 0]()
    root = cached_tree(args.cache, layout, shape, sizes)
    cmds = count_commands(layout, root)
    reps = args.cold_reps if cold else args.reps
    res = interleaved(cmds, reps, cold=cold, ok={"check": (0, 1, 2), "check (baseline)": (0, 1, 2)})
    doc = json.loads(res["stats"][-1].out)
    total = doc["totals"]["total"] + doc["totals"]["foreign"]
    assert total == sum(sizes), (total, sum(sizes))
    # vsqs 0.3 cannot int() "<id>.new": its listing leaves those out
    listed = sum(sizes) - (doc["totals"]["writing"] if layout == "vsqs" else 0)
    assert int(res["client"][-1].out) == listed, (res["client"][-1].out, listed)
    row = {k: {"ms": med(v) * 1000, "cpu_ms": med_cpu(v) * 1000, "rss_mb": peak(v)} for k, v in res.items()}
    row.update(layout=layout, shape=shape, messages=sum(sizes), queues=len(sizes), cache="cold" if cold else "warm")
    return row


def print_counts(row: dict) -> None:
    f, c = row["find"]["ms"], row["client"]["ms"]
    print(f"[{row['layout']:4} {row['shape']:6} {row['cache']}] {row['messages']:>9,} msgs / {row['queues']:>4} queues:"
          f"  find {f:7.0f} ms ({row['find']['rss_mb']:4.0f} MB)  client {c:7.0f} ms ({row['client']['rss_mb']:4.0f} MB)",
          flush=True)
    fl = row["python floor"]
    print(f"    python floor   {fl['ms']:7.0f} ms = {fl['ms'] / f:5.2f}x find (start, os.listdir in 2 processes, nothing parsed)",
          flush=True)
    for k in ("stats", "check", "stats (baseline)", "check (baseline)"):
        if k not in row:
            continue
        r = row[k]
        print(f"    qconsole {k:5} {r['ms']:7.0f} ms = {r['ms'] / f:5.2f}x find, {r['ms'] / c:5.2f}x client;"
              f" peak RSS {r['rss_mb']:5.0f} MB; CPU {r['cpu_ms']:6.0f} ms = {r['cpu_ms'] / max(row['find']['cpu_ms'], 1):5.2f}x"
              f" find's", flush=True)


def bench_startup(args: argparse.Namespace) -> dict:
    tiny = os.path.join(args.cache, "trees", "tiny-vsqs")
    if not os.path.exists(tiny):
        build(tiny, "vsqs", [5, 5])
    tiny_ddmq = os.path.join(args.cache, "trees", "tiny-ddmq")
    if not os.path.exists(tiny_ddmq):
        build(tiny_ddmq, "ddmq", [5, 5])
    env = dict(BASE_ENV, QCONSOLE_ROOT=tiny)
    cmds = {
        "stats --json": [QCONSOLE, "stats", "--json", tiny],
        "check": [QCONSOLE, "check", tiny],
        "stats ddmq": [QCONSOLE, "stats", "--json", tiny_ddmq],
        "check ddmq": [QCONSOLE, "check", tiny_ddmq],
        "ls (piped)": [QCONSOLE, "ls", "q00"],
        "ls (terminal)": [QCONSOLE, "ls", "q00"],
        "stats (terminal)": [QCONSOLE, "stats", tiny],
        "ls --json": [QCONSOLE, "ls", "q00", "--json"],
        "ls ddmq (piped)": [QCONSOLE, "ls", "--root", tiny_ddmq, "q00"],
        "ls --json ddmq": [QCONSOLE, "ls", "--root", tiny_ddmq, "q00", "--json"],
        # the interpreter qconsole's script runs on (a regular install's venv has its own)
        "python -c pass": [os.path.join(os.path.dirname(QCONSOLE), "python"), "-c", "pass"],
    }
    if BASELINE:  # the same commands of the baseline's qconsole, in the same rounds
        cmds.update({f"{k} (baseline)": _as_baseline(argv) for k, argv in list(cmds.items()) if argv[0] == QCONSOLE})
    # the terminal table as an operator sees it (TTY_COMPATIBLE: the switch Rich and qconsole read; no pty needed)
    envs = {k: dict(env, TTY_COMPATIBLE="1") if "(terminal)" in k else env for k in cmds}
    res = {}
    for k, argv in cmds.items():  # warm-up
        run(argv, env=envs[k])
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(max(15, 3 * args.reps)):  # a few ms each: more rounds than the counts take
        for k, argv in cmds.items():
            times[k].append(run(argv, env=envs[k]).secs)
    print("start-up on a tiny root (2 queues of 5; VSQS unless it says ddmq), ÷ the same qconsole's "
          "stats --json of that layout:", flush=True)
    for k, ts in times.items():
        m = statistics.median(ts)
        res[k] = m * 1000
        side = " (baseline)" if k.endswith(" (baseline)") else ""
        base = statistics.median(times[("stats ddmq" if "ddmq" in k else "stats --json") + side])
        print(f"    {k:28} {m * 1000:6.1f} ms = {m / base:4.2f}x", flush=True)
    return res


# --------------------------------------------------------------------------- bulk operations


def _fresh(base: str, name: str) -> str:
    """``base/name``, empty: a tree there before is renamed into the graveyard, not deleted
    (:func:`_reap` deletes it between cases; see :func:`_spread_out`)."""
    path = os.path.join(base, name)
    if os.path.lexists(path):
        grave = os.path.join(base, ".grave")
        os.makedirs(grave, exist_ok=True)
        os.rename(path, os.path.join(grave, uuid.uuid4().hex))
    return path


def _reap(base: str, *, unless_room: bool = False) -> None:
    """The graveyard's trees deleted: between cases, never between a build and its timed run.
    ``unless_room``: only when the file system runs short (a quarter of its inodes or space
    left), since the groups just freed are the ones the next trees land in."""
    if unless_room:
        st = os.statvfs(base)
        if st.f_ffree > st.f_files // 4 and st.f_bavail > st.f_blocks // 4:
            return
    shutil.rmtree(os.path.join(base, ".grave"), ignore_errors=True)
    os.sync()


def _spread_out(base: str) -> str | None:
    """Trees built under ``base`` spread over the file system's block groups (ext4's
    top-of-hierarchy flag, ``chattr +T``), away from the groups where earlier trees were
    deleted. Why: ext4 without a journal (this project's VMs: ``/sys/fs/ext4/<dev>/journal_task``
    says ``<none>``) skips every inode freed in the last 60 s (300 s while its inode table
    block is dirty) at each create, reading its inode table block to tell (``recently_deleted``
    in ``fs/ext4/ialloc.c``). A tree deleted seconds before a build and its timed run made every
    create of both sides cost 200-400 us (a 20k publish: 2,300 creates/s instead of 26,000),
    which crushed every ratio toward 1.0. What an operation deletes itself still costs its own
    later creates, on both sides. None, or why it could not be set."""
    try:
        out = subprocess.run(["chattr", "+T", base], capture_output=True, text=True)
    except OSError as err:
        return f"chattr: {err.strerror}"
    return None if out.returncode == 0 else (out.stderr.strip() or "chattr +T failed")


def _settle() -> None:
    """Write the tree just built to disk before a timed run, as a live queue's messages are
    (the kernel writes dirty data back within ~30 s). Unsettled, the build's writeback landed
    in whichever run came next: the first fsync of a run (ext4 data=ordered) waited for the
    whole tree's data, and an unlink of a file never written back frees no blocks, so
    fsyncing and unlinking sides swung 2-5x with the order of the rounds."""
    os.sync()


def build_expired_ddmq(root: str, n: int, queues: tuple[str, ...] = ("q",), ready: int = 0) -> None:
    """ddmq root: ``n`` expired messages in q/work (requeue: true), ``ready`` waiting ones."""
    rnd = random.Random(3)
    now = time.time()
    os.makedirs(root)
    _touch(os.path.join(root, "ddmq.yaml"))
    for q in queues:
        os.makedirs(os.path.join(root, q, "work"))
        _touch(os.path.join(root, q, "ddmq.yaml"), YAML_DEFAULTS.replace("cleaned: 0", f"cleaned: {int(now)}").encode())
    q = queues[0]
    for i in range(n + ready):
        prio = rnd.choice((999, 10, 1))
        qn = str(now - 3600 + i * 0.001).replace(".", "")
        uid = uuid.UUID(int=rnd.getrandbits(128)).hex
        fname = f"{prio}.{qn}.ddmq{uid}"
        body = ddmq_body(q, f"job {i}", prio, qn, uid, fname, requeue=True)
        if i < n:
            _touch(os.path.join(root, q, "work", f"{int(now) - rnd.randint(1, 600)}.{fname}"), body)
        else:
            _touch(os.path.join(root, q, fname), body)


def build_expired_vsqs(root: str, n: int, queues: tuple[str, ...] = ("q",), ready: int = 0) -> None:
    now_us = int(time.time() * 1_000_000)
    os.makedirs(root)
    for q in queues:
        os.mkdir(os.path.join(root, q))
    base = now_us - (n + ready) * 10 - 3_600_000_000
    for i in range(n + ready):
        mid = base + i * 10
        name = f"{mid}.{now_us - 1_000_000 - i}" if i < n else str(mid)
        _touch(os.path.join(root, queues[0], name), b'{"job": %d}' % i)


CLIENT_DDMQ_CLEAN = (
    "import sys; sys.path.insert(0, {tests!r})\n"
    "from peers import ddmq_module\n"
    "b = ddmq_module().broker({root!r})\n"
    "b.get_settings('q')\n"
    "b.clean('q', force=True)\n"
)
CLIENT_VSQS_REQUEUE = (
    "import types\n"
    "from vsqs.queue import Queue\n"
    "q = Queue.__new__(Queue); q.path = {qdir!r}\n"
    "assert q._get_oldest_message(visibility_timeout=600) == (None, None)\n"
)
CLIENT_VSQS_REQUEUE_MIXED = (  # the same pass on a queue with ready messages: it also takes the oldest
    "from vsqs.queue import Queue\n"
    "q = Queue.__new__(Queue); q.path = {qdir!r}; q._mid_cache = {{}}\n"
    "q._get_oldest_message(visibility_timeout=600)\n"
)
CLIENT_DDMQ_PURGE = (
    "import sys; sys.path.insert(0, {tests!r})\n"
    "from peers import ddmq_module\n"
    "print(ddmq_module().broker({root!r}).purge_queue('q'))\n"
)
CLIENT_VSQS_PURGE = (  # vsqs 0.3 has no purge; delete() works only in the consuming process
    "import os, types\n"
    "from vsqs.queue import Queue\n"
    "d = {qdir!r}\n"
    "for m in list(Queue._list_messages(types.SimpleNamespace(path=d))):\n"
    "    os.unlink(os.path.join(d, '.'.join(map(str, m))))\n"
)
CLIENT_DDMQ_MOVE = (  # what a ddmq user's redrive script does: read, publish into dest, remove
    "import os, sys; sys.path.insert(0, {tests!r})\n"
    "from peers import ddmq_module\n"
    "b = ddmq_module().broker({root!r})\n"
    "w, k = b.get_message_list('q')\n"
    "for name in w:\n"
    "    p = os.path.join({root!r}, 'q', name)\n"
    "    m = b.get_message(p)\n"
    "    b.publish('dest', m.message, priority=m.priority, clean=False)\n"
    "    os.remove(p)\n"
)
CLIENT_VSQS_MOVE = (  # receive from src, publish into dest, delete: the client's own protocol
    "import os, sys, types\n"
    "from vsqs.queue import Queue\n"
    "class M: observer = types.SimpleNamespace(schedule=lambda *a: None)\n"
    "src = Queue(M, {src!r}); dst = Queue(M, {dst!r})\n"
    "while True:\n"
    "    mid, data = src._get_oldest_message(600)\n"
    "    if mid is None: break\n"
    "    dst.publish(data)\n"
    "    src.delete(mid)\n"
)
CLIENT_VSQS_PUBLISH = (  # the client's own publish, n times (it lists the queue per message)
    "import types\n"
    "from vsqs.queue import Queue\n"
    "class M: observer = types.SimpleNamespace(schedule=lambda *a: None)\n"
    "q = Queue(M, {qdir!r})\n"
    "for _ in range({n}): q.publish(b'hello')\n"
)
CLIENT_DDMQ_PUBLISH = (  # ddmq's own publish, n times
    "import sys; sys.path.insert(0, {tests!r})\n"
    "from peers import ddmq_module\n"
    "b = ddmq_module().broker({root!r})\n"
    "for _ in range({n}): b.publish('q', 'hello', clean=False)\n"
)
CLIENT_DDMQ_DELETE = (  # a ddmq user deleting messages by id: list once, delete_message() per match
    "import os, sys; sys.path.insert(0, {tests!r})\n"
    "from peers import ddmq_module\n"
    "b = ddmq_module().broker({root!r})\n"
    "ids = set(open({ids!r}).read().split())\n"
    "w, k = b.get_message_list('q')\n"
    "for name in w:\n"
    "    if name.rpartition('.ddmq')[2] in ids:\n"
    "        b.delete_message(os.path.join({root!r}, 'q', name))\n"
)
RENAME_LOOP = (
    "import os\n"
    "src, dst = {src!r}, {dst!r}\n"
    "for n in os.listdir(src):\n"
    "    os.rename(os.path.join(src, n), os.path.join(dst, n))\n"
)


def _rate(n: int, secs: list[float]) -> float:
    return n / statistics.median(secs)


#: where bench_bulk builds its trees (its graveyard: .grave)
BULK_BASE = ""
#: only the bulk cases whose label contains one of these words (--ops); empty: all
OPS: list[str] = []


def _wanted(label: str) -> bool:
    return not OPS or any(w in label for w in OPS)


def bulk_case(label: str, n: int, reps: int, setup, ours: list[str], theirs: list[str], theirs_label: str,
              check=None, env: dict | None = None, stdin: str | None = None) -> dict | None:
    """Interleaved rounds: fresh tree, qconsole; fresh tree, the client's action. ``stdin``: a
    file qconsole reads (written by ``setup``), not the client."""
    if not _wanted(label):
        return None
    _reap(BULK_BASE, unless_room=True)
    t_ours: list[float] = []
    t_base: list[float] = []
    t_theirs: list[float] = []
    for _ in range(reps):
        setup()
        _settle()
        t_ours.append(run(ours, env=env, stdin=stdin).secs)
        if check:
            check()
        if BASELINE and (stdin is None or _baseline_reads_ids()):
            setup()
            _settle()
            t_base.append(run(_as_baseline(ours), env=env, stdin=stdin).secs)
            if check:
                check()
        setup()
        _settle()
        t_theirs.append(run(theirs, env=env).secs)
    a, b = _rate(n, t_ours), _rate(n, t_theirs)
    print(f"    {label:38} {n:>7,} msgs: qconsole {a:8,.0f}/s   {theirs_label} {b:8,.0f}/s   = {a / b:5.2f}x"
          f"{_base_note(n, t_base, b)}  [load {os.getloadavg()[0]:.1f}]", flush=True)
    row = {"op": label, "n": n, "qconsole_per_s": a, "client": theirs_label, "client_per_s": b}
    if t_base:
        row["baseline_per_s"] = _rate(n, t_base)
    return row


def _as_baseline(argv: list[str]) -> list[str]:
    """The same qconsole command run by --baseline's console script."""
    return [BASELINE, *argv[1:]] if BASELINE and argv and argv[0] == QCONSOLE else argv


@functools.lru_cache(maxsize=None)
def _baseline_reads_ids() -> bool:
    """Whether --baseline's qconsole reads ids from stdin with '-' (an older one takes it for an id)."""
    out = subprocess.run([BASELINE, "delete", "--help"], capture_output=True, text=True, env=BASE_ENV)
    return "stdin" in out.stdout


def _ready_ids(layout: str, qdir: str) -> list[str]:
    """The ids of a queue built here (every message ready), from the names."""
    names = sorted(os.listdir(qdir))
    if layout == "ddmq":
        return [i.rpartition(".ddmq")[2] for i in names if ".ddmq" in i]
    return names


def _base_note(n: int, t_base: list[float], client_rate: float) -> str:
    if not t_base:
        return ""
    r = _rate(n, t_base)
    return f"   (baseline {r:8,.0f}/s = {r / client_rate:5.2f}x)"


def bench_bulk(args: argparse.Namespace) -> list[dict]:
    global BULK_BASE
    base = BULK_BASE = os.path.join(args.cache, "bulk")
    os.makedirs(base, exist_ok=True)
    why = _spread_out(base)
    if why:
        print(f"trees not spread over block groups ({why}): creates may pay for recent deletes", flush=True)
    n = args.bulk_n
    reps = args.bulk_reps
    env = dict(BASE_ENV, QCONSOLE_READ_ONLY="")
    out = []
    root = os.path.join(base, "root")
    audit = ["--audit-log", os.path.join(base, "audit.log")]

    def qc(*argv: str) -> list[str]:
        return [QCONSOLE, *argv, "--root", root, *audit]

    from qconsole.backends import backend_class, open_target

    for kind in ("vsqs", "ddmq"):  # imported now: the checks must not pick up a half-edited checkout
        backend_class(kind)

    def left(layout: str, q: str, want: int) -> None:
        s = open_target(root, layout).scan_queue(q)
        assert s.counts["ready"] == want, (s.counts, want)
        assert s.counts["writing"] == 0, s.counts

    print(f"bulk operations (median of {reps} rounds, a fresh tree per run):", flush=True)
    for size in sorted({min(20_000, n), n}):
        out.append(bulk_case(
            "ddmq requeue --all (expired)", size, reps,
            lambda size=size: build_expired_ddmq(_fresh(base, "root"), size),
            qc("requeue", "q", "--all"),
            [sys.executable, "-c", CLIENT_DDMQ_CLEAN.format(tests=TESTS, root=root)], "ddmq clean()",
            check=lambda size=size: left("ddmq", "q", size), env=env))
    out.append(bulk_case(
        "vsqs requeue --expired", n, reps,
        lambda: build_expired_vsqs(_fresh(base, "root"), n),
        qc("requeue", "q", "--expired"),
        [sys.executable, "-c", CLIENT_VSQS_REQUEUE.format(qdir=os.path.join(root, "q"))], "vsqs requeue pass",
        check=lambda: left("vsqs", "q", n), env=env))
    few, ready = 1000, args.mixed_ready
    for layout, builder, client, label in (
        ("ddmq", build_expired_ddmq, CLIENT_DDMQ_CLEAN.format(tests=TESTS, root=root), "ddmq clean()"),
        ("vsqs", build_expired_vsqs, CLIENT_VSQS_REQUEUE_MIXED.format(qdir=os.path.join(root, "q")),
         "vsqs requeue pass"),
    ):
        out.append(bulk_case(
            f"{layout} requeue --expired, {ready // 1000}k ready", few, reps,
            lambda b=builder: b(_fresh(base, "root"), few, ready=ready),
            qc("requeue", "q", "--expired"), [sys.executable, "-c", client], label,
            check=lambda lay=layout: left(lay, "q", few + ready), env=env))
    for layout, builder, client, label in (
        ("ddmq", build_expired_ddmq, CLIENT_DDMQ_PURGE.format(tests=TESTS, root=root), "ddmq purge_queue"),
        ("vsqs", build_expired_vsqs, CLIENT_VSQS_PURGE.format(qdir=os.path.join(root, "q")), "listdir+unlink"),
    ):
        for extra in ([], ["--no-trash"]):
            out.append(bulk_case(
                f"{layout} purge --yes {' '.join(extra)}".rstrip(), n, reps,
                lambda b=builder: b(_fresh(base, "root"), n // 2, ready=n - n // 2),
                qc("purge", "q", "--yes", *extra), [sys.executable, "-c", client], label,
                check=lambda lay=layout: left(lay, "q", 0), env=env))
        out.append(_restore_case(base, root, layout, builder, n, reps, qc, env))
    for layout, builder in (("ddmq", build_expired_ddmq), ("vsqs", build_expired_vsqs)):
        out.append(_delete_case(base, root, layout, builder, min(n, args.delete_n), reps, qc, env))
    ids_file = os.path.join(base, "ids.txt")

    def with_ids(layout: str, builder, queues: tuple[str, ...]):
        """A fresh tree of n ready messages in q, and their ids in ids_file (what `ls --ids` prints)."""
        def setup() -> None:
            builder(_fresh(base, "root"), 0, queues=queues, ready=n)
            with open(ids_file, "w") as fh:
                fh.write("".join(i + "\n" for i in _ready_ids(layout, os.path.join(root, "q"))))
        return setup

    for layout, builder in (("ddmq", build_expired_ddmq), ("vsqs", build_expired_vsqs)):
        out.append(bulk_case(
            f"{layout} delete - (ids on stdin)", n, reps, with_ids(layout, builder, ("q",)),
            qc("delete", "q", "-", "--yes"), [sys.executable, "-c", UNLINK_LOOP.format(d=os.path.join(root, "q"))],
            "listdir+unlink", check=lambda lay=layout: left(lay, "q", 0), env=env, stdin=ids_file))
        if layout == "ddmq":  # the client's own delete call (vsqs 0.3's lists the queue per id)
            out.append(bulk_case(
                "ddmq delete - vs delete_message()", n, reps, with_ids(layout, builder, ("q",)),
                qc("delete", "q", "-", "--yes"),
                [sys.executable, "-c", CLIENT_DDMQ_DELETE.format(tests=TESTS, root=root, ids=ids_file)],
                "delete_message()", check=lambda: left("ddmq", "q", 0), env=env, stdin=ids_file))
        out.append(bulk_case(
            f"{layout} move - (ids on stdin)", n, reps, with_ids(layout, builder, ("q", "dest")),
            qc("move", "q", "dest", "-"), qc("move", "q", "dest", "--all"), "qconsole move --all",
            check=lambda lay=layout: left(lay, "dest", n), env=env, stdin=ids_file))
    move_n = min(n, args.move_client_n)
    out.append(bulk_case(
        "ddmq move --all (ready)", move_n, reps,
        lambda: build_expired_ddmq(_fresh(base, "root"), 0, queues=("q", "dest"), ready=move_n),
        qc("move", "q", "dest", "--all"),
        [sys.executable, "-c", CLIENT_DDMQ_MOVE.format(tests=TESTS, root=root)], "ddmq get+publish+remove",
        check=lambda: left("ddmq", "dest", move_n), env=env))
    out.append(bulk_case(
        "vsqs move --all (ready)", move_n, reps,
        lambda: build_expired_vsqs(_fresh(base, "root"), 0, queues=("q", "dest"), ready=move_n),
        qc("move", "q", "dest", "--all"),
        [sys.executable, "-c", CLIENT_VSQS_MOVE.format(src=os.path.join(root, "q"), dst=os.path.join(root, "dest"))],
        "vsqs receive+publish+delete", check=lambda: left("vsqs", "dest", move_n), env=env))
    out.append(bulk_case(
        "ddmq publish -n", move_n, reps, lambda: build_expired_ddmq(_fresh(base, "root"), 0, queues=("q",)),
        qc("publish", "q", '"hello"', "-n", str(move_n)),
        [sys.executable, "-c", CLIENT_DDMQ_PUBLISH.format(tests=TESTS, root=root, n=move_n)], "ddmq publish()",
        check=lambda: left("ddmq", "q", move_n), env=env))
    out.append(bulk_case(
        "vsqs publish -n", move_n, reps, lambda: build_expired_vsqs(_fresh(base, "root"), 0, queues=("q",)),
        qc("publish", "q", "hello", "-n", str(move_n)),
        [sys.executable, "-c", CLIENT_VSQS_PUBLISH.format(qdir=os.path.join(root, "q"), n=move_n)],
        "vsqs publish()", check=lambda: left("vsqs", "q", move_n), env=env))
    shutil.rmtree(root, ignore_errors=True)
    _reap(base)
    return [r for r in out if r]


def _restore_case(base: str, root: str, layout: str, builder, n: int, reps: int, qc, env) -> dict | None:
    """trash restore of a purged queue vs a bare rename loop over the same trashed files."""
    if not _wanted(f"{layout} trash restore"):
        return None
    _reap(base, unless_room=True)
    t_ours: list[float] = []
    t_base: list[float] = []
    t_theirs: list[float] = []
    for _ in range(reps):
        builder(_fresh(base, "root"), n // 2, ready=n - n // 2)
        run(qc("purge", "q", "--yes"), env=env)
        _settle()
        t_ours.append(run(qc("trash", "restore"), env=env).secs)
        if BASELINE:
            builder(_fresh(base, "root"), n // 2, ready=n - n // 2)
            run(qc("purge", "q", "--yes"), env=env)
            _settle()
            t_base.append(run(_as_baseline(qc("trash", "restore")), env=env).secs)
        builder(_fresh(base, "root"), n // 2, ready=n - n // 2)
        src = os.path.join(root, "q")  # ddmq: the waiting files (work/ stays): a floor per file
        dst = os.path.join(root, "moved")
        os.mkdir(dst)
        _settle()
        t_theirs.append(run([sys.executable, "-c", RENAME_LOOP.format(src=src, dst=dst)]).secs)
    a, b = _rate(n, t_ours), _rate(n - (n // 2 if layout == "ddmq" else 0), t_theirs)
    print(f"    {layout + ' trash restore':38} {n:>7,} msgs: qconsole {a:8,.0f}/s   bare rename loop {b:8,.0f}/s"
          f"   = {a / b:5.2f}x{_base_note(n, t_base, b)}  [load {os.getloadavg()[0]:.1f}]", flush=True)
    row = {"op": f"{layout} trash restore", "n": n, "qconsole_per_s": a, "client": "bare rename loop",
           "client_per_s": b}
    if t_base:
        row["baseline_per_s"] = _rate(n, t_base)
    return row


def _delete_case(base: str, root: str, layout: str, builder, n: int, reps: int, qc, env) -> dict | None:
    """``delete Q ID... --yes`` of every ready message (ids on the command line, so at most
    --delete-n: argv is capped at 2 MB) vs a bare listdir+unlink loop over the same files."""
    if not _wanted(f"{layout} delete"):
        return None
    _reap(base, unless_room=True)
    qdir = os.path.join(root, "q")
    t: dict[str, list[float]] = {"trash": [], "no-trash": [], "client": [], "trash base": [], "no-trash base": []}
    for _ in range(reps):
        for how in ("trash", "no-trash", *(("trash base", "no-trash base") if BASELINE else ())):
            builder(_fresh(base, "root"), 0, ready=n)
            ids = _ready_ids(layout, qdir)
            _settle()
            extra = ["--no-trash"] if how.startswith("no-trash") else []
            argv = qc("delete", "q", *ids, "--yes", *extra)
            t[how].append(run(_as_baseline(argv) if how.endswith("base") else argv, env=env).secs)
            assert not [x for x in os.listdir(qdir) if x not in ("ddmq.yaml", "work")], "delete left messages"
        builder(_fresh(base, "root"), 0, ready=n)
        _settle()
        t["client"].append(run([sys.executable, "-c", UNLINK_LOOP.format(d=qdir)]).secs)
    c = _rate(n, t["client"])
    rows = []
    for how in ("trash", "no-trash"):
        a = _rate(n, t[how])
        label = f"{layout} delete IDS{' --no-trash' if how == 'no-trash' else ''}"
        tb = t[f"{how} base"]
        print(f"    {label:38} {n:>7,} msgs: qconsole {a:8,.0f}/s   listdir+unlink {c:8,.0f}/s   = {a / c:5.2f}x"
              f"{_base_note(n, tb, c)}  [load {os.getloadavg()[0]:.1f}]", flush=True)
        rows.append({"op": label, "n": n, "qconsole_per_s": a, "client": "listdir+unlink", "client_per_s": c,
                     **({"baseline_per_s": _rate(n, tb)} if tb else {})})
    return {"op": f"{layout} delete", "rows": rows}


UNLINK_LOOP = (
    "import os\n"
    "d = {d!r}\n"
    "for n in os.listdir(d):\n"
    "    if '.ddmq' in n or n.isdigit(): os.unlink(os.path.join(d, n))\n"
)


# --------------------------------------------------------------------------- main


def regular_install(src: str, cache: str, label: str) -> str:
    """A regular (non-editable) install of the checkout ``src``, as an operator's ``pip install``
    makes it, in a venv of its own under ``cache``; its console script. An editable install
    adds setuptools' import finder (~13 ms: pathlib, urllib, ipaddress) to every start, which
    no operator pays. The dependencies come from this venv (a path entry: its .pth files, the
    editable finder among them, are not run)."""
    import sysconfig

    venv = os.path.join(cache, f"venv-regular-{label}")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    pip = [sys.executable, "-m", "pip", "--python", os.path.join(venv, "bin", "python"), "-q"]
    with tempfile.TemporaryDirectory() as wheels:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, src], check=True)
        wheel = [os.path.join(wheels, w) for w in os.listdir(wheels) if w.endswith(".whl")]
        subprocess.run([*pip, "install", "--no-deps", *wheel], check=True)
    site = subprocess.run([os.path.join(venv, "bin", "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "zz-bench-deps.pth"), "w") as fh:
        fh.write(sysconfig.get_paths()["purelib"] + "\n")
    return os.path.join(venv, "bin", "qconsole")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cold", action="store_true", help="also time with the page cache dropped (root only)")
    ap.add_argument("--cold-reps", type=int, default=3)
    ap.add_argument("--shapes", default="big,many,spread")
    ap.add_argument("--layouts", default="vsqs,ddmq")
    ap.add_argument("--cache", default="/tmp/qc-scale")
    ap.add_argument("--no-counts", action="store_true")
    ap.add_argument("--no-startup", action="store_true")
    ap.add_argument("--bulk", action="store_true", help="also time bulk operations against the clients'")
    ap.add_argument("--bulk-n", type=int, default=None, help="messages per bulk operation (100k; quick 5k)")
    ap.add_argument("--bulk-reps", type=int, default=3)
    ap.add_argument("--mixed-ready", type=int, default=100_000,
                    help="waiting messages beside the 1k expired ones of the mixed requeue case")
    ap.add_argument("--move-client-n", type=int, default=20_000,
                    help="move size (the VSQS client lists the destination per publish: O(n^2))")
    ap.add_argument("--delete-n", type=int, default=40_000,
                    help="delete size (ids go on the command line, which Linux caps at 2 MB)")
    ap.add_argument("--json", help="write every figure to this file")
    ap.add_argument("--qconsole", help="the qconsole console script to time (default: this venv's)")
    ap.add_argument("--baseline", help="another qconsole console script timed in the same rounds (before/after; "
                    "bulk operations too)")
    ap.add_argument("--regular", action="store_true",
                    help="time a regular (non-editable) install of this checkout, as operators install it")
    ap.add_argument("--baseline-src", help="a checkout to install regularly and time as --baseline")
    ap.add_argument("--ops", default="", help="only bulk cases whose label holds one of these comma-separated words")
    args = ap.parse_args()
    global QCONSOLE
    if args.qconsole:  # e.g. an older checkout's venv, for before/after figures
        QCONSOLE = args.qconsole
    OPS.extend(w for w in args.ops.split(",") if w)
    os.makedirs(args.cache, exist_ok=True)
    if args.regular:
        QCONSOLE = regular_install(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), args.cache, "this")
        print(f"timing a regular install: {QCONSOLE}", flush=True)
    if args.baseline_src:
        args.baseline = regular_install(args.baseline_src, args.cache, "baseline")
    if args.baseline:
        global BASELINE
        BASELINE = args.baseline
    if args.bulk_n is None:
        args.bulk_n = 5_000 if args.quick else 100_000
    if args.quick:
        args.move_client_n = min(args.move_client_n, 2_000)
        args.mixed_ready = min(args.mixed_ready, 5_000)
    os.makedirs(args.cache, exist_ok=True)
    load = os.getloadavg()
    print(f"bench_scale: {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"medians of {args.reps}{' (quick sizes)' if args.quick else ''}, trees under {args.cache}", flush=True)
    doc: dict = {"load": load, "quick": args.quick, "counts": [], "startup": None, "bulk": None}
    if not args.no_startup:
        doc["startup"] = bench_startup(args)
    if not args.no_counts:
        caches = ["warm"]
        if args.cold:
            why = drop_caches()
            if why:
                print(f"cold cache: {why}; warm cache only", flush=True)
            else:
                caches.append("cold")
        for shape in args.shapes.split(","):
            for layout in args.layouts.split(","):
                for cache in caches:
                    row = bench_counts(args, layout, shape, cache == "cold")
                    print_counts(row)
                    doc["counts"].append(row)
    if args.bulk:
        doc["bulk"] = bench_bulk(args)
    load = os.getloadavg()
    print(f"load after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1)


if __name__ == "__main__":
    main()
