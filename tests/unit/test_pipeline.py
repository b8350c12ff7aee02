"""A big queue listed here and parsed in a forked process counts exactly as in one process,
in bounded memory, and a child that fails or dies leaves the count to this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from qconsole.backends.fs import pipeline

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _run(code: str) -> object:
    # in a fresh interpreter: pytest's process may hold threads, which fork must not copy
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True)
    assert out.stderr == ""
    return json.loads(out.stdout)


def test_parse_beside_gives_the_childs_answer_and_lists_here():
    got = _run("""
        import json, os
        from qconsole.backends.fs.pipeline import parse_beside
        parent = os.getpid()
        def chunks():
            for i in range(50):
                yield [f"n{i}-{j}" for j in range(3000)], {f"n{i}-0"} if i % 7 == 0 else set()
        def parse(it):
            seen = n = odd = 0
            for names, irregular in it:
                n += len(names)
                odd += len(irregular)
                seen = seen or os.getpid() != parent
            return [n, odd, seen]
        print(json.dumps(parse_beside(chunks(), parse)))
    """)
    assert got == [True, [150_000, 8, True]]


def test_a_failing_or_dying_child_answers_none_and_a_listing_error_is_raised_here():
    got = _run("""
        import json, os
        from qconsole.backends.fs.pipeline import parse_beside
        def chunks(n=20, fail=False):
            for i in range(n):
                yield [str(i)] * 5000, set()
            if fail:
                raise PermissionError(13, "Permission denied")
        def boom(it):
            next(it)
            raise RuntimeError("parser bug")
        def dies(it):
            next(it)
            os._exit(0)  # gone without an answer
        out = [parse_beside(chunks(), boom), parse_beside(chunks(), dies)]
        try:
            parse_beside(chunks(3, fail=True), lambda it: sum(1 for _ in it))
        except PermissionError as err:
            out.append(err.strerror)
        print(json.dumps(out))
    """)
    assert got == [[False, None], [False, None], "Permission denied"]


def test_streamed_count_beside_equals_one_process_and_the_exact_path(tmp_path):
    q = tmp_path / "q"
    q.mkdir()
    base = 1_700_000_000_000_000
    for i in range(3000):  # ready, held (expired and in flight), writing, temp, foreign, and a consume in flight
        name = {0: f"{base + i}.{base + 10**12}", 1: f"{base + i}.{base - 10**9}", 2: f"{base + i}.new"}.get(i % 50, str(base + i))
        (q / name).touch()
    for extra in ("junk", ".qconsole-tmp-x", f"{base + 7}.{base + 10**12}", "17\n18", "١٢٣", "1" * 30 + ".5"):
        (q / extra).touch()
    os.close(os.open(os.fsencode(q) + b"/\xff\xfe17", os.O_CREAT | os.O_WRONLY))  # not UTF-8
    got = _run(f"""
        import json
        from qconsole.backends.vsqs import layout
        from qconsole.backends.fs import listing
        root, now = {str(tmp_path)!r}, 1_700_000_100.0
        def doc(s):
            return [s.counts, s.oldest_ready_created, s.next_deadline, s.errors, s.warnings, s.id_unit]
        exact = doc(layout.scan_queue(root, "q", now))
        layout.STREAM_BYTES = 0
        listing.STREAM_CHUNK = 97
        here = doc(layout.scan_queue(root, "q", now))
        beside = doc(layout.scan_queue(root, "q", now, beside=True))
        print(json.dumps([exact, here, beside]))
    """)
    exact, here, beside = got
    assert exact == here == beside
    assert exact[0]["ready"] == 3000 - 3 * 60 - 1 and exact[0]["writing"] == 61 and exact[0]["foreign"] == 5
    assert any("absurd id" in line for line in exact[3])  # the same error line on every path


def test_a_frame_too_long_stops_the_child():
    r, w = os.pipe()
    os.write(w, pipeline._LEN.pack(pipeline.MAX_FRAME + 1))
    os.close(w)
    with pytest.raises(ValueError):
        list(pipeline._frames(r))
    os.close(r)


def test_ddmq_streamed_count_beside_equals_the_exact_path(tmp_path):
    (tmp_path / "ddmq.yaml").touch()
    q = tmp_path / "q"
    (q / "work").mkdir(parents=True)
    (q / "ddmq.yaml").touch()
    for i in range(2500):  # waiting at three priorities; consumed ones (expired and in flight); a consume in flight
        (q / f"{(1, 9, 999)[i % 3]}.{1_700_000_000_000 + i}.ddmq{i:032x}").touch()
        if i % 10 == 0:
            (q / "work" / f"{1_700_000_050 + (i % 100)}.9.{1_690_000_000_000 + i}.ddmq{(10**6 + i):032x}").touch()
    (q / "work" / f"1700000999.1.1700000000000.ddmq{0:032x}").touch()  # id 0 is also waiting
    for extra in ("junk.ddmqx", ".qconsole-tmp-x"):
        (q / extra).touch()
    (q / "work" / "bad.ddmq").touch()
    got = _run(f"""
        import json
        from qconsole.backends.ddmq import layout
        from qconsole.backends.fs import listing
        root, now = {str(tmp_path)!r}, 1_700_000_080.0
        def doc(s):
            return [s.counts, s.by_priority, s.oldest_ready_created, s.next_deadline, s.errors, s.warnings]
        exact = doc(layout.scan_queue(root, "q", now, stream=False))
        layout.STREAM_BYTES = 0
        listing.STREAM_CHUNK = 97
        here = doc(layout.scan_queue(root, "q", now))
        beside = doc(layout.scan_queue(root, "q", now, beside=True))
        print(json.dumps([exact, here, beside]))
    """)
    exact, here, beside = got
    assert exact == here == beside
    assert exact[0]["ready"] == 2499 and exact[0]["inflight"] + exact[0]["expired"] == 251
    assert exact[0]["expired"] == 75 and exact[0]["foreign"] == 2 and exact[0]["writing"] == 1


def test_with_merge_this_process_parses_what_a_slow_child_has_not_taken():
    got = _run("""
        import json, os, time
        from qconsole.backends.fs.pipeline import parse_beside
        parent = os.getpid()
        def chunks():
            for i in range(40):
                yield [f"n{i}-{j}" for j in range(20000)], set()
        def parse(it):
            n, by = 0, {}
            for names, _irregular in it:
                if os.getpid() != parent:
                    time.sleep(0.02)  # a child slower than the listing
                n += len(names)
                who = "parent" if os.getpid() == parent else "child"
                by[who] = by.get(who, 0) + 1
            return [n, by]
        def merge(a, b):
            by = dict(a[1])
            for k, v in b[1].items():
                by[k] = by.get(k, 0) + v
            return [a[0] + b[0], by]
        print(json.dumps(parse_beside(chunks(), parse, merge)))
    """)
    ran, (n, by) = got
    assert ran and n == 800_000  # every chunk parsed once, by one of the two
    assert by["parent"] > 0 and by["child"] > 0 and by["parent"] + by["child"] == 40
