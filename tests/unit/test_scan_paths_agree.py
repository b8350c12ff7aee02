"""The bulk counting paths agree with the plain per-name ones, whatever a listing holds.

Counting takes shortcuts (one ``findall`` over a newline-joined listing, ``os.listdir``
without entry types); these properties check them against the straightforward forms on
random listings: valid names, near misses, duplicates, newlines, ddmq's own files, temp files.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qconsole.backends.ddmq import layout as ddmq
from qconsole.backends.vsqs import layout as vsqs
from qconsole.backends.fs import listing as fs_listing_mod
from qconsole.backends.fs.listing import QC_TEMP_PREFIX

NOW = 1_700_000_000.0

digits = st.text("0123456789", min_size=1, max_size=4)
uid = st.text("0123456789abcdefAB", min_size=1, max_size=6)
junk = st.sampled_from(["junk", "9.1.ddmq", "9..ddmqab", "x.1.ddmqab", "9.1.ddmqa-b", "1.2.3", "9.1.ddmqab\n9.2.ddmqcd",
                        "\n", "9.1.ddmqab\n", "ddmq.yaml", "work", "ddmq.yaml.example", f"{QC_TEMP_PREFIX}claim",
                        "٣.1.ddmqab", "9.1.DDMQab"])
waiting_name = st.builds(lambda p, q, u: f"{p}.{q}.ddmq{u}", digits, digits, uid)
work_name = st.builds(lambda d, p, q, u: f"{d}.{p}.{q}.ddmq{u}", digits, digits, digits, uid)


def _per_name(pattern, names):
    """The reference: one fullmatch per name."""
    groups, rest = [], []
    for n in names:
        m = pattern.fullmatch(n)
        (groups.append(m.groups()) if m else rest.append(n))
    return groups, rest


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(waiting_name, work_name, junk), max_size=25))
def test_bulk_parse_equals_per_name_parse(names):
    for pattern, lines, known in ((ddmq._WAITING_RE, ddmq._WAITING_LINES, ddmq._QUEUE_FILES),
                                  (ddmq._WORK_RE, ddmq._WORK_LINES, frozenset())):
        groups, rest = ddmq._bulk_parse(pattern, lines, names, frozenset(), known)
        want_groups, want_rest = _per_name(pattern, names)
        assert sorted(groups) == sorted(want_groups)
        assert sorted(rest) == sorted(want_rest)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(waiting_name, work_name, junk), max_size=25), st.data())
def test_small_parse_equals_per_name_parse(names, data):
    """The name-by-name parse of a short listing (``ls`` of a small queue: no re import) takes
    exactly what the patterns take whole, and leaves out the names that are no regular file."""
    irregular = frozenset(data.draw(st.lists(st.sampled_from(names), max_size=3))) if names else frozenset()
    for parse, pattern in ((ddmq.parse_waiting, ddmq._WAITING_RE), (ddmq.parse_work, ddmq._WORK_RE)):
        groups, rest = ddmq.small_parse(parse, names, irregular)
        want_groups, want_rest = _per_name(pattern, [n for n in names if n not in irregular])
        assert groups == want_groups
        assert sorted(rest) == sorted(want_rest + [n for n in names if n in irregular])


vsqs_name = st.one_of(
    digits.map(lambda d: "17" + d),
    st.builds(lambda i, d: f"17{i}.{d}", digits, digits),
    digits.map(lambda d: f"17{d}.new"),
    st.sampled_from(["junk", "1.x", "12.", ".5", "٣٣", "1.2.3", f"{QC_TEMP_PREFIX}x", "17.new.1"]),
    # a leading zero: vsqs lists it and never acts on it (foreign), "0" itself is canonical
    digits.map(lambda d: "0" + d), st.builds(lambda i, d: f"17{i}.0{d}", digits, digits),
    digits.map(lambda d: f"0{d}.new"), st.sampled_from(["0", "0.0", "17.0", "0.17"]),
)


def _on_disk(names: list[str], ddmq_layout: bool) -> str:
    root = tempfile.mkdtemp(prefix="qc-agree-")
    q = os.path.join(root, "q")
    os.makedirs(os.path.join(q, "work") if ddmq_layout else q)
    if ddmq_layout:
        for f in (os.path.join(root, "ddmq.yaml"), os.path.join(q, "ddmq.yaml")):
            open(f, "w").close()
    for n in names:
        open(os.path.join(q, n), "w").close()
    return root


def _fields(scan):
    return (scan.counts, scan.by_priority, scan.oldest_ready_created, scan.next_deadline, sorted(scan.errors),
            scan.warnings, scan.id_unit)


def _assert_paths_agree(module, root: str, names: list[str]) -> None:
    """Names alone, typed listing and collecting give one answer for regular files."""
    try:
        fast = module.scan_queue(root, "q", NOW)
        typed = module.scan_queue(root, "q", NOW, check_types=True)
        collected = module.scan_queue(root, "q", NOW, collect=True)
    finally:
        shutil.rmtree(root)
    assert _fields(fast) == _fields(typed) == _fields(collected)
    temp = sum(n.startswith(QC_TEMP_PREFIX) for n in names)  # qconsole's own: writing, not messages
    assert fast.total - temp == len(collected.messages)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(vsqs_name, max_size=20, unique=True))
def test_vsqs_names_alone_equals_typed_listing_for_regular_files(names):
    _assert_paths_agree(vsqs, _on_disk(names, ddmq_layout=False), names)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(waiting_name, junk.filter(lambda n: "\n" not in n and n not in ("work", "ddmq.yaml"))),
                max_size=15, unique=True),
       st.lists(work_name, max_size=8, unique=True))
def test_ddmq_names_alone_equals_typed_listing_for_regular_files(waiting, work):
    root = _on_disk(waiting, ddmq_layout=True)
    for n in work:
        open(os.path.join(root, "q", "work", n), "w").close()
    _assert_paths_agree(ddmq, root, waiting)


def _streamed_equals_exact(module, root: str, monkeypatch) -> None:
    """The chunked, bounded-memory count of a huge queue gives what the exact path gives."""
    import qconsole.backends.fs.listing as fs_listing

    try:
        exact = module.scan_queue(root, "q", NOW)
        exact_typed = module.scan_queue(root, "q", NOW, check_types=True)
        with monkeypatch.context() as m:
            m.setattr(module, "STREAM_BYTES", 0)
            m.setattr(fs_listing, "STREAM_CHUNK", 3)
            streamed = module.scan_queue(root, "q", NOW)
            streamed_typed = module.scan_queue(root, "q", NOW, check_types=True)
    finally:
        shutil.rmtree(root)
    assert fs_listing.STREAM_BYTES > 0
    assert _fields(streamed) == _fields(exact)
    assert _fields(streamed_typed) == _fields(exact_typed)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(vsqs_name, max_size=30, unique=True))
def test_vsqs_streamed_count_equals_exact(monkeypatch, names):
    _streamed_equals_exact(vsqs, _on_disk(names, ddmq_layout=False), monkeypatch)


def test_vsqs_streamed_count_handles_a_consume_during_the_listing(tmp_path, monkeypatch):
    """Ready and held under one id (a consume in flight) counts once, on the streamed path itself."""
    q = tmp_path / "q"
    q.mkdir()
    names = ["1700000000000001", "1700000000000002", "1700000000000001.1700000000000009", "1700000000000004.new",
             "junk", f"{QC_TEMP_PREFIX}tmp-x", "1700000000000005.1600000000000000", "1700000000000006"]
    for n in names:
        (q / n).write_text("")
    os.mkfifo(q / "1700000000000007")
    exact = [vsqs.scan_queue(str(tmp_path), "q", NOW, check_types=t) for t in (False, True)]
    used = []
    real = vsqs._scan_streamed
    monkeypatch.setattr(vsqs, "_scan_streamed", lambda *a: used.append(real(*a)) or used[-1])
    monkeypatch.setattr(vsqs, "STREAM_BYTES", 0)
    monkeypatch.setattr(fs_listing_mod, "STREAM_CHUNK", 2)
    streamed = [vsqs.scan_queue(str(tmp_path), "q", NOW, check_types=t) for t in (False, True)]
    assert used == [True, True]
    assert [_fields(s) for s in streamed] == [_fields(s) for s in exact]
    assert streamed[0].counts["ready"] == 3 and streamed[1].counts["ready"] == 2  # the FIFO: foreign when typed
    assert streamed[0].counts["inflight"] == 1 and streamed[0].counts["expired"] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(vsqs_name, max_size=12, unique=True), min_size=1, max_size=6),
       st.sampled_from(["1700000000000000", "1700000000000", "17000000000000000000", "100", "10"]),
       st.sampled_from(["", "ready-and-new", "ready-and-held", "short-deadline", "not-new", "zero-led-ready",
                        "zero-led-held", "zero-led-deadline", "zero-led-new"]))
def test_vsqs_count_many_equals_scan_queue_per_queue(count_path, queues, base, twist):
    """The short way for plain small queues gives what the exact per-queue scan gives, for any mix:
    plain ready/held queues (in µs, ms or ns), empty ones, and ones with anything unusual; read
    by Python or by the C reader (``count_path``)."""
    root = tempfile.mkdtemp(prefix="qc-many-")
    try:
        names = []
        for qi, listing in enumerate(queues):
            name = f"q{qi}"
            names.append(name)
            os.makedirs(os.path.join(root, name))
            if qi % 2:  # every other queue plain: ids of one width, some held, some being written
                b = int(base)
                listing = [str(b + i) if i % 3 else f"{b + i}.{b + 10**6 * i}" if i % 2 else f"{b + i}.new"
                           for i in range(len(listing))]
                if listing and twist == "ready-and-new":  # a publish finishing during the listing
                    listing.append(f"{b + 1}.new")
                elif listing and twist == "ready-and-held":  # a consume during the listing
                    listing.append(f"{b + 1}.{b}")
                elif listing and twist == "short-deadline":
                    listing.append(f"{b + 10**4}.{b // 10}")
                elif twist == "not-new":  # as long as a writing name, but foreign
                    listing.append(f"{b + len(listing)}.tmp")
                elif twist.startswith("zero-led"):  # of the same width: a leading zero, foreign
                    z = "0" + str(b + 7)[1:]
                    listing.append({"zero-led-ready": z, "zero-led-held": f"{z}.{b}", "zero-led-new": f"{z}.new",
                                    "zero-led-deadline": f"{b + 10**5}.{z}"}[twist])
            for n in listing:
                open(os.path.join(root, name, n), "w").close()
        many = vsqs.count_many(root, names, NOW)
        one = [vsqs.scan_queue(root, n, NOW) for n in names]
    finally:
        shutil.rmtree(root)
    assert many == one


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(waiting_name, junk.filter(lambda n: "\n" not in n and n not in ("work", "ddmq.yaml"))),
                max_size=20, unique=True),
       st.lists(work_name, max_size=8, unique=True),
       st.lists(uid, max_size=3, unique=True))
def test_ddmq_streamed_count_equals_exact(monkeypatch, waiting, work, shared):
    """A big queue directory counted from its listing in chunks (ids as hashes) gives what the
    whole listing gives, with ids also in work/ (a consume during the listing); an id in two
    waiting files counts twice there (as ddmq would deliver both), once on the exact path."""
    waiting = list(dict.fromkeys(waiting + [f"9.{i}.ddmq{u}" for i, u in enumerate(shared)]
                                 + [f"1.1700000000{i}.ddmq{u}" for i, u in enumerate(shared[:1])]))
    work = list(dict.fromkeys(work + [f"1700000100.9.{i}.ddmq{u}" for i, u in enumerate(shared[1:2])]))
    root = _on_disk(waiting, ddmq_layout=True)
    for n in work:
        open(os.path.join(root, "q", "work", n), "w").close()
    try:
        exact = [ddmq.scan_queue(root, "q", NOW, check_types=t, stream=False) for t in (False, True)]
        with monkeypatch.context() as m:
            m.setattr(ddmq, "STREAM_BYTES", 0)
            m.setattr(fs_listing_mod, "STREAM_CHUNK", 3)
            streamed = [ddmq.scan_queue(root, "q", NOW, check_types=t) for t in (False, True)]
    finally:
        shutil.rmtree(root)
    held_list = [ddmq.parse_work(n)[-1] for n in work if ddmq.parse_work(n)]
    held = set(held_list)
    uids = [ddmq.parse_waiting(n)[-1] for n in waiting if ddmq.parse_waiting(n)]
    extra = len([u for u in uids if u not in held]) - len({u for u in uids if u not in held})
    if len(held) != len(held_list):
        extra = 0  # an id twice in work/: the whole queue is counted the exact way
    for got, want in zip(streamed, exact):
        if extra:
            assert got.counts["ready"] == want.counts["ready"] + extra
            got.counts["ready"] = want.counts["ready"]
            got.by_priority = want.by_priority  # (the copy's priority holds one more)
            got.oldest_ready_created = want.oldest_ready_created  # (the exact path kept one of the two)
            got.warnings = want.warnings  # (and so may have seen one priority width fewer)
        assert _fields(got) == _fields(want)


def _chunked(names: list[str], cuts: list[int]) -> list[tuple[list[str], frozenset[str]]]:
    """``names`` cut into chunks at the given sizes (the last one takes the rest)."""
    chunks, i = [], 0
    for size in cuts:
        chunks.append((names[i:i + size], frozenset()))
        i += size
    chunks.append((names[i:], frozenset()))
    return [c for c in chunks if c[0]]


@settings(max_examples=300, deadline=None)
@example(["9.1.ddmq"] * 15 + ["x.1.ddmqab"] * 15, [], [15], [False, True] * 5, [])
@given(st.lists(st.one_of(waiting_name, junk.filter(lambda n: "\n" not in n)), max_size=40),
       st.lists(st.one_of(work_name, junk.filter(lambda n: "\n" not in n)), max_size=25),
       st.lists(st.integers(1, 9), max_size=8), st.lists(st.booleans(), min_size=10, max_size=10),
       st.lists(uid, max_size=4))
def test_ddmq_summaries_split_between_two_processes_merge_to_the_whole(waiting, work, cuts, mine, held_extra):
    """The parent parses the chunks its child has not taken yet (fs/pipeline.py); the two
    halves' summaries, merged, settle to what one summary of every chunk settles to."""
    def split(chunks):
        ours = [c for i, c in enumerate(chunks) if mine[i % len(mine)]]
        theirs = [c for i, c in enumerate(chunks) if not mine[i % len(mine)]]
        return ours, theirs

    wchunks = _chunked(waiting, cuts)
    a, b = split(wchunks)
    whole = ddmq._summarize_waiting(iter(wchunks))
    merged = ddmq._merge_waiting(ddmq._summarize_waiting(iter(a)), ddmq._summarize_waiting(iter(b)))
    held = {hash(u) for u in held_extra} | {hash(ddmq.parse_waiting(n)[2]) for n in waiting[:3] if ddmq.parse_waiting(n)}
    settled = []
    for summary in (whole, merged):
        errors = ddmq.ErrorList()
        out = ddmq._settle_waiting(summary, held, errors)
        # past MAX_ERRORS lines, which ones are kept depends on the split; their number does not
        lines = sorted(errors.lines) if errors.dropped == 0 else len(errors.lines) + errors.dropped
        settled.append((out, lines))
    assert settled[0] == settled[1]

    hchunks = _chunked(work, cuts[::-1])
    a, b = split(hchunks)
    whole = ddmq._summarize_work(iter(hchunks), NOW)
    merged = ddmq._merge_work(ddmq._summarize_work(iter(a), NOW), ddmq._summarize_work(iter(b), NOW))

    def norm(s):
        hashes = None if s[2] is None else sorted(ddmq._hash_set(s[2]))
        return s[0], s[1], hashes, s[3], s[4], sorted(s[5]) if s[6] == 0 else len(s[5]) + s[6]

    assert norm(whole) == norm(merged)


def test_vsqs_count_many_counts_a_name_listed_twice_once(tmp_path, monkeypatch):
    """A listing taken during renames can return one name twice: the short count for small
    queues counts it once, as the exact path does. (Python's reader: os.listdir can be made to
    repeat a name; the C reader's getdents cannot, and its id check is the same.)"""
    monkeypatch.setattr(fs_listing_mod, "plain_c", None)
    q = tmp_path / "q"
    q.mkdir()
    for i in range(3):
        (q / f"170000000000000{i}").touch()
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: (lambda ns: ns + ns[:1])(real(path)))
    many = vsqs.count_many(str(tmp_path), ["q"], NOW)
    assert many == [vsqs.scan_queue(str(tmp_path), "q", NOW)]
    assert many[0].counts["ready"] == 3
