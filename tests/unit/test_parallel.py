"""Scanning in forked processes gives exactly the counts one process gives, and survives a failed child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from qconsole.backends.fs import parallel
from qconsole.model import QueueScan
from qconsole.backends import open_target as Root

QCONSOLE_BIN = os.path.join(os.path.dirname(sys.executable), "qconsole")


#: for the scripts below (root `r`, `os` imported): from here on every forked scanner fails
CHILDREN_DIE = "; ".join([
    "parent = os.getpid()", "real = r.module.scan_queue",
    "r.module.scan_queue = lambda *a, **k: real(*a, **k) if os.getpid() == parent else 1 / 0",
])


def _vsqs_root(tmp_path, sizes):
    for qi, n in enumerate(sizes):
        q = tmp_path / f"q{qi}"
        q.mkdir()
        for i in range(n):
            (q / str(1_700_000_000_000_000 + i)).touch()
        (q / f"{1_700_000_000_000_000 + n}.{1_900_000_000_000_000}").touch()
        (q / "junk").touch()
    return str(tmp_path)


def test_arrange_orders_biggest_first_and_sizes_nothing_past_many_queues(tmp_path, monkeypatch):
    root = _vsqs_root(tmp_path, [3, 900, 300])
    listed = lambda r, n: [os.path.join(r, n)]  # noqa: E731
    order, jobs = parallel.arrange(root, ["q0", "q1", "q2"], listed, 3)
    assert order == ["q1", "q2", "q0"] and jobs == 3
    assert parallel.arrange(root, ["q0", "q1"], listed, None)[1] == 1  # a small root: one process
    many = [f"n{i}" for i in range(parallel.MANY_QUEUES + 1)]
    monkeypatch.setattr(parallel, "dir_size", lambda _p: pytest.fail("sized a root of many queues"))
    monkeypatch.setattr(parallel, "spare_cpus", lambda: 2)
    assert parallel.arrange(root, many, listed, None) == (many, 2)
    assert parallel.arrange(root, many, listed, 8)[1] == 8


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_the_pool_hands_each_queue_to_exactly_one_process(tmp_path):
    # each process notes what it scanned in its own file; a slow queue must not hold up the rest
    log = tmp_path / "log"
    log.mkdir()
    code = textwrap.dedent(f"""
        import json, os, time
        from qconsole.backends.fs import parallel
        from qconsole.model import QueueScan
        names = [f"q{{i}}" for i in range(1000)]
        def scan_share(share):
            with open(os.path.join({str(log)!r}, str(os.getpid())), "a") as fh:
                fh.write("".join(n + "\\n" for n in share))
            if "q0" in share:
                time.sleep(0.5)  # the first chunk is slow: the others take the rest meanwhile
            return [QueueScan(n, "vsqs", 1.0, {{"ready": int(n[1:])}}) for n in share]
        done = parallel.scan_pooled(names, 3, scan_share)
        print(json.dumps([done[n][0].counts["ready"] for n in names]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == list(range(1000))
    per_process = {p.name: p.read_text().split() for p in log.iterdir()}
    assert len(per_process) == 3  # the parent and two children all took work
    taken = [n for names in per_process.values() for n in names]
    assert sorted(taken) == sorted(f"q{i}" for i in range(1000))  # each exactly once
    slow = next(names for names in per_process.values() if "q0" in names)
    assert len(slow) < 500  # the process held up by q0 did not get a fixed half


def test_auto_jobs_stays_single_for_small_roots():
    assert parallel.auto_jobs([4096] * 10) == 1
    assert parallel.auto_jobs([parallel.MIN_PARALLEL_BYTES]) == 1  # one queue: nothing to share
    many = parallel.auto_jobs([parallel.MIN_PARALLEL_BYTES] * 10)
    assert 1 <= many <= min(parallel.MAX_JOBS, parallel.available_cpus())


def test_pack_round_trips_every_field():
    # every field a distinct value: one rebuilt in the wrong position would show
    scan = QueueScan("q", "ddmq", 1.5, {"ready": 3}, 1.25, 2.75, {"9": {"ready": 3}}, ["e"], ["w"], 1e6,
                     extras={"vt": 30})
    ((back, extra),) = parallel._unpack(parallel._pack([(scan, "its text")]))
    assert extra == "its text"
    assert back == scan
    assert {f: getattr(back, f) for f in QueueScan.__slots__} == {f: getattr(scan, f) for f in QueueScan.__slots__}
    assert back.messages is None  # never sent: a count collects none


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_scan_equals_one_process_and_a_failed_child_is_rescanned(tmp_path):
    # in a fresh interpreter: pytest's process may hold threads, which fork must not copy
    root = _vsqs_root(tmp_path, [30, 7, 12, 0, 3])
    code = textwrap.dedent(f"""
        import json, os
        from qconsole.backends.fs import parallel
        from qconsole.backends import open_target as Root
        r = Root({root!r})
        def doc(s):
            return [[q.name, q.counts, q.errors, q.oldest_ready_created, q.next_deadline] for q in s.queues]
        one = doc(r.scan(now=1.7e9, jobs=1))
        two = doc(r.scan(now=1.7e9, jobs=3))
        {CHILDREN_DIE}
        again = doc(r.scan(now=1.7e9, jobs=3))
        print(json.dumps([one, two, again]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    one, two, again = json.loads(out.stdout)
    assert out.stderr == ""
    assert one == two == again
    assert [q[1]["ready"] for q in one] == [30, 7, 12, 0, 3]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_parts_written_by_forked_scanners_make_the_same_document(tmp_path):
    # each process writes its queues' parts of the stats document; the parent's document must be
    # byte for byte the one written from the scans alone, also when a child dies (rescanned here)
    root = _vsqs_root(tmp_path, [30, 7, 12, 0, 3, 9, 1])
    code = textwrap.dedent(f"""
        import json, os
        from qconsole.backends import open_target as Root
        from qconsole.fastpath import queue_parts, render_machine
        from qconsole.output.jsontext import dumps_pretty
        from qconsole.output.stats_json import stats_document
        r = Root({root!r})
        def both(s):
            s.duration_s = 0.25  # the one figure that differs by run
            return render_machine(s, "json", pretty=True), dumps_pretty(stats_document(s)) + "\\n"
        plain = r.scan(now=1.7e9, jobs=1)
        pooled = r.scan(now=1.7e9, jobs=3, each=queue_parts("json", 2))
        {CHILDREN_DIE}
        rescued = r.scan(now=1.7e9, jobs=3, each=queue_parts("json", 2))
        v1 = r.scan(now=1.7e9, jobs=3, each=queue_parts("json", 1))
        v1.duration_s = 0.25
        print(json.dumps([plain.per_queue, [type(p).__name__ for p in pooled.per_queue], both(plain), both(pooled), both(rescued),
                          render_machine(v1, "json", pretty=True, schema=1), dumps_pretty(stats_document(v1, 1)) + "\\n"]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    none, part_types, plain, pooled, rescued, v1, v1_generic = json.loads(out.stdout)
    assert out.stderr == ""
    assert none is None and part_types == ["str"] * 7  # every part written where it was scanned
    assert plain[0] == plain[1] == pooled[0] == pooled[1] == rescued[0] == rescued[1]
    assert json.loads(pooled[0])["queues"][2]["ready"] == 12
    assert v1 == v1_generic and '"delayed"' not in v1  # parts written for the schema asked for


def test_installed_cli_gives_the_same_document_with_and_without_jobs(tmp_path):
    root = _vsqs_root(tmp_path, [50, 20, 20, 5])
    docs = []
    for extra in ([], ["--jobs", "1"], ["--jobs", "3"], ["--jobs", "3", "--check-types"]):
        res = subprocess.run([QCONSOLE_BIN, "stats", "--json", root, *extra], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        for key in ("generated_at", "scan_duration_s"):
            doc.pop(key, None)
        for part in (*doc["queues"], doc["totals"]):  # relative to the clock: differ by run
            part.pop("oldest_ready_age_s", None)
            part.pop("next_expiry_s", None)
        docs.append(doc)
    assert all(d == docs[0] for d in docs)


def test_root_scan_defaults_to_one_process(tmp_path, monkeypatch):
    root = Root(_vsqs_root(tmp_path, [3, 3]))
    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked without being asked"))
    assert [q.counts["ready"] for q in root.scan().queues] == [3, 3]


def test_no_process_or_pipe_to_spare_means_scanning_here(tmp_path, monkeypatch):
    root = Root(_vsqs_root(tmp_path, [4, 2, 1]))
    want = [q.counts for q in root.scan(now=1.7e9).queues]

    def refuse(*_a):
        raise OSError(11, "Resource temporarily unavailable")

    for name in ("fork", "pipe"):
        with monkeypatch.context() as m:
            m.setattr(os, name, refuse)
            assert [q.counts for q in root.scan(now=1.7e9, jobs=3).queues] == want


def test_a_busy_machine_gets_one_process(monkeypatch):
    import io

    monkeypatch.setattr(parallel, "available_cpus", lambda: 4)
    for line, spare in ((b"0.1 0.2 0.3 1/200 99\n", 4), (b"5.0 5.0 5.0 3/200 99\n", 2), (b"9 9 9 12/200 99\n", 1)):
        monkeypatch.setattr(parallel, "open", lambda *_a, line=line, **_k: io.BytesIO(line), raising=False)
        assert parallel.spare_cpus() == spare
        big = [parallel.MIN_PARALLEL_BYTES] * 10
        assert parallel.auto_jobs(big) == spare
    monkeypatch.setattr(parallel, "open", lambda *_a, **_k: io.BytesIO(b"garbage"), raising=False)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (2.5, 0.0, 0.0))
    assert parallel.spare_cpus() == 2  # no /proc/loadavg to read: the 1-minute load average


def test_a_task_runnable_for_an_instant_is_not_a_busy_core(monkeypatch):
    import io

    monkeypatch.setattr(parallel, "available_cpus", lambda: 2)
    monkeypatch.setattr(parallel.time, "sleep", lambda _s: None)

    def readings(*counts: int):
        lines = iter(counts)
        monkeypatch.setattr(parallel, "open", lambda *_a, **_k: io.BytesIO(b"0.5 0.5 0.5 %d/80 99\n" % next(lines)),
                            raising=False)

    readings(2, 1)  # the shell that started us, on its way to wait(): gone a moment later
    assert parallel.spare_cpus() == 2
    readings(2, 2, 1)
    assert parallel.spare_cpus() == 2
    readings(2, 2, 2, 1)  # busy three times running: busy (the fourth is never read)
    assert parallel.spare_cpus() == 1
    readings(1)  # idle at once: read once
    assert parallel.spare_cpus() == 2
