"""ddmq's short count for plain small queues (``count_many`` -> ``_count_plain``) gives exactly
what the exact per-queue scan gives, on random roots of plain queues and queues with
something unusual; and it is the path plain queues take."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qconsole.backends.ddmq import layout as ddmq
from qconsole.backends.fs.listing import QC_TEMP_PREFIX

NOW = 1_700_000_000.0

prio = st.sampled_from(["0", "1", "9", "10", "999", "007"])
qn = st.one_of(st.integers(1_600_000_000_000, 1_800_000_000_000).map(lambda n: f"{n}{n % 7}"),
               st.sampled_from(["1", "42", "17000000001"]))
uid = st.text("0123456789abcdefAB", min_size=1, max_size=8)
deadline = st.integers(1_699_999_990, 1_700_000_010).map(str)
#: near misses of a message name: each must send its queue the exact way (foreign there)
NEAR = ["1..ddmqab", ".1.ddmqab", "1.2.ddmq", "1.2.ddmqa_b", "1.2.DDMQab", "\u0663.2.ddmqab", "1.2.ddmqab.x",
        "1" * 21 + ".2.ddmqab", "1.2.ddmq" + "a" * 65, "1.2.xddmqab", "+1.2.ddmqab", " 1.2.ddmqab",
        "1.2.ddmqa\u00e9", "1.2.ddmqa b", "1.2", "1.2.3.ddmqab", "ddmq", "1.2.ddmq\u0663",
        "1.2.ddmqab.3.4.ddmqcd"]  # (the last: two names' worth of fields in one name)
WORK_NEAR = ["1.2.ddmqab", "1..2.ddmqab", "1700000000.1.2.ddmq", "1700000000.1.2.ddmqa-b", "+1.1.2.ddmqab",
             "1700000000.1.2.3.ddmqab", "\u0663.1.2.ddmqab", "1700000000.1." + "2" * 21 + ".ddmqab",
             "1700000000.1.2.ddmqab.1700000000.1.2.ddmqcd"]
TWISTS = ["", "ready-and-held", "ready-twice", "held-twice", "foreign", "glob-foreign", "temp", "example",
          "intermediate", "newline", "subdir-in-work", "subdir-in-queue", "no-work-files", "bad-work-name",
          "long-deadline", "dot-shift", "wdot-shift"] + [f"near:{n}" for n in NEAR] + [f"wnear:{n}" for n in WORK_NEAR]
#: a name with a dot too many beside one with a dot too few: joined at a dot, in one order, they
#: read as two good names (found by a hostile review of a parser that joined listings at dots)
DOT_SHIFT = ["1.2.ddmqa.3", "4.ddmqb"]
WORK_DOT_SHIFT = ["1700000000.1.2.ddmqa.9", "1.2.ddmqb"]


#: twists that add one name to the queue directory, or to work/
EXTRA = {"foreign": "notes.txt", "glob-foreign": "x.1.ddmqab", "temp": f"{QC_TEMP_PREFIX}publish-1",
         "example": "ddmq.yaml.example", "intermediate": "ddmq.yaml.intermediate",
         "newline": "notes\n1.2.ddmqzz"}  # (one name, one line of it like a message)
WORK_EXTRA = {"bad-work-name": "soon.1.1.ddmqab",
              "long-deadline": "170000000000.1.1.ddmqzz"}  # (more digits than any clock: foreign)


def _make_queue(qdir: str, waiting: list[tuple[str, str, str]], held: list[tuple[str, str, str, str]],
                twist: str) -> None:
    os.makedirs(os.path.join(qdir, "work"))
    open(os.path.join(qdir, "ddmq.yaml"), "w").close()
    names = [f"{p}.{q}.ddmq{u}" for p, q, u in waiting]
    wnames = [f"{d}.{p}.{q}.ddmq{u}" for d, p, q, u in held]
    if twist == "ready-and-held" and waiting:  # a consume during the listing: one id in both
        p, q, u = waiting[0]
        wnames.append(f"1700000005.{p}.{q}.ddmq{u}")
    elif twist == "ready-twice" and waiting:  # a copy under another queue number
        p, q, u = waiting[0]
        names.append(f"{p}.{q}9.ddmq{u}")
    elif twist == "held-twice" and held:
        d, p, q, u = held[0]
        wnames.append(f"{int(d) + 1}.{p}.{q}.ddmq{u}")
    elif twist in EXTRA:
        names.append(EXTRA[twist])
    elif twist == "subdir-in-work":
        os.mkdir(os.path.join(qdir, "work", "1700000000.1.1.ddmqdir"))
    elif twist == "subdir-in-queue":
        os.mkdir(os.path.join(qdir, "1.1.ddmqdir"))
    elif twist in WORK_EXTRA:
        wnames.append(WORK_EXTRA[twist])
    elif twist == "dot-shift":
        names.extend(DOT_SHIFT)
    elif twist == "wdot-shift":
        wnames.extend(WORK_DOT_SHIFT)
    elif twist.startswith("near:"):
        names.append(twist[5:])
    elif twist.startswith("wnear:"):
        wnames.append(twist[6:])
    for n in names:
        open(os.path.join(qdir, n), "w").close()
    for n in wnames:
        open(os.path.join(qdir, "work", n), "w").close()


queue = st.tuples(
    st.lists(st.tuples(prio, qn, uid), max_size=12, unique_by=lambda t: t[2]),
    st.lists(st.tuples(deadline, prio, qn, uid), max_size=5, unique_by=lambda t: t[3]),
    st.sampled_from(TWISTS),
)


@pytest.fixture(params=["regex", "split", "c"])
def parser(request, monkeypatch):
    """Every parser of the short way: the patterns' findall, split at the dots (small roots), and
    the C reader (backends/fs/_plain.c), which lists and checks the queue itself."""
    if request.param == "c":
        request.getfixturevalue("c_module")
    else:
        from qconsole.backends.fs import listing

        monkeypatch.setattr(listing, "plain_c", None)
        monkeypatch.setattr(ddmq, "_use_split", lambda: request.param == "split")
    return request.param


def _exact_calls(monkeypatch) -> list[str]:
    """The queues count_many sends the exact way (whatever reader took the others)."""
    calls: list[str] = []
    real = ddmq._scan_queue
    monkeypatch.setattr(ddmq, "_scan_queue", lambda root, name, *a, **k: calls.append(name) or real(root, name, *a, **k))
    return calls


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(queue, min_size=1, max_size=5))
def test_count_many_equals_scan_queue_per_queue(parser, queues):
    root = tempfile.mkdtemp(prefix="qc-ddmq-many-")
    try:
        open(os.path.join(root, "ddmq.yaml"), "w").close()
        names = []
        for i, (waiting, held, twist) in enumerate(queues):
            held = [h for h in held if h[3] not in {w[2] for w in waiting}]  # distinct ids unless twisted
            names.append(f"q{i}")
            _make_queue(os.path.join(root, f"q{i}"), waiting, held, twist)
        many = ddmq.count_many(root, names, NOW)
        one = [ddmq.scan_queue(root, n, NOW) for n in names]
    finally:
        shutil.rmtree(root)
    assert many == one


def test_plain_queues_take_the_short_way_and_unusual_ones_the_exact_way(tmp_path, monkeypatch, parser):
    open(tmp_path / "ddmq.yaml", "w").close()
    waiting = [("9", "17000000001234", "aa"), ("10", "17000000005678", "bb"), ("9", "17000000000001", "cc")]
    held = [("1700000100", "9", "17000000000002", "dd"), ("1600000000", "10", "17000000000003", "ee")]
    _make_queue(str(tmp_path / "plain"), waiting, held, "")
    _make_queue(str(tmp_path / "odd"), waiting, held, "glob-foreign")
    exact = _exact_calls(monkeypatch)
    plain, odd = ddmq.count_many(str(tmp_path), ["plain", "odd"], NOW)
    assert exact == ["odd"]
    assert plain.counts["ready"] == 3 and plain.counts["inflight"] == 1 and plain.counts["expired"] == 1
    assert plain.by_priority == {"9": {"ready": 2, "inflight": 1, "expired": 0},
                                 "10": {"ready": 1, "inflight": 0, "expired": 1}}
    assert plain.oldest_ready_created == ddmq.ddmq_created("17000000000001")
    assert plain.next_deadline == 1700000100.0
    assert plain.warnings and "mixed-width" in plain.warnings[0]
    assert odd.counts["foreign"] == 1 and any("x.1.ddmqab" in e for e in odd.errors)


@pytest.mark.parametrize("twist", [f"near:{n}" for n in NEAR] + [f"wnear:{n}" for n in WORK_NEAR])
def test_every_near_miss_sends_its_queue_the_exact_way(tmp_path, monkeypatch, twist, parser):
    """A name the exact path's pattern does not take whole is never counted the short way."""
    open(tmp_path / "ddmq.yaml", "w").close()
    _make_queue(str(tmp_path / "q"), [("9", "17000000001234", "aa")], [("1700000100", "9", "17000000000002", "dd")],
                twist)
    exact = _exact_calls(monkeypatch)
    many = ddmq.count_many(str(tmp_path), ["q"], NOW)
    assert exact == ["q"]
    assert many == [ddmq.scan_queue(str(tmp_path), "q", NOW)]
    assert many[0].counts["foreign"] == 1


def test_a_small_root_is_counted_without_importing_re(tmp_path):
    """Nagios runs `check` every minute: a small ddmq root of plain queues compiles no pattern."""
    import subprocess
    import sys

    open(tmp_path / "ddmq.yaml", "w").close()
    _make_queue(str(tmp_path / "q"), [("9", "17000000001234", "aa")], [("1700000100", "9", "17000000000002", "dd")], "")
    code = ("import sys; from qconsole.backends import open_target; s = open_target(sys.argv[1]).scan(jobs=1); "
            "assert s.queues[0].counts['ready'] == 1; print('re' in sys.modules)")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_ls_of_a_small_queue_lists_it_without_importing_re(tmp_path):
    """``ls`` starts as quickly as ``stats`` (issue 13): a small ddmq queue's listing is parsed
    name by name, and what it shows is what the patterns would have taken."""
    import json
    import subprocess
    import sys

    open(tmp_path / "ddmq.yaml", "w").close()
    _make_queue(str(tmp_path / "q"), [("9", "17000000001234", "aa"), ("10", "17000000001235", "bb")],
                [("1700000100", "9", "17000000000002", "dd")], "glob-foreign")
    code = ("import sys, io; from qconsole.output.ls_view import write_ls\n"
            "out, sys.stdout = sys.stdout, io.StringIO()\n"
            "write_ls(sys.argv[1], 'auto', 'q', state=None, limit=None, as_json=True)\n"
            "doc, sys.stdout = sys.stdout.getvalue(), out\n"
            "print('re' in sys.modules); print(doc)")
    out = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    imported, doc = out.stdout.split("\n", 1)
    assert imported == "False"
    rows = json.loads(doc)["messages"]
    assert [(m["id"], m["state"]) for m in rows] == [("bb", "ready"), ("aa", "ready"), ("dd", "expired")]
    assert any("x.1.ddmqab" in e for e in json.loads(doc)["errors"])


def test_a_root_of_many_queues_is_parsed_by_the_patterns_compiled_before_any_fork(tmp_path):
    """The pooled scan hands out chunks of a few queues: the choice is the root's (prepare_count),
    made once before the scanners fork, not each chunk's."""
    import subprocess
    import sys

    open(tmp_path / "ddmq.yaml", "w").close()
    for i in range(70):
        _make_queue(str(tmp_path / f"q{i:02d}"), [("9", f"170000000{i:05d}", f"a{i}")], [], "")
    code = ("import sys; from qconsole.backends.ddmq import layout as L; from qconsole.backends import open_target\n"
            "from qconsole.backends.fs import listing; listing.plain_c = None  # (Python's reader)\n"
            "def no(*a): raise AssertionError('split')\n"
            "L._split_parse = no\n"
            "s = open_target(sys.argv[1]).scan(jobs=2)\n"
            "assert [q.counts['ready'] for q in s.queues] == [1] * 70 and not any(q.errors for q in s.queues)\n"
            "print(len(L._COMPILED))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "4"


@pytest.mark.parametrize("order", [0, 1])
def test_a_dot_too_many_beside_a_dot_too_few_is_never_two_good_names(order):
    """In either listing order, in either directory, such a pair sends the queue the exact way."""
    pair, wpair = (DOT_SHIFT, WORK_DOT_SHIFT) if order == 0 else (DOT_SHIFT[::-1], WORK_DOT_SHIFT[::-1])
    good = ["9.17000000001234.ddmqaa"]
    assert ddmq._regex_parse(good + pair, []) is None
    assert ddmq._regex_parse(good, wpair) is None
    assert ddmq._regex_parse(good, []) is not None
    assert ddmq._count_plain("q", ["ddmq.yaml", "work", *good, *pair], [], NOW) is None
    assert ddmq._count_plain("q", ["ddmq.yaml", "work", *good], wpair, NOW) is None
