"""A VSQS requeue by state picks its messages from one listing (``held_by_state``): the usual
listing (every dotted name held, ids of one width, each once) takes a short way in a few C
passes and says the ids' names are their only ones, so the batch skips its own count. The
short way must pick exactly what the general way picks, and say "sole" only when it is so."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from qconsole.backends.vsqs import layout

NOW = 1_795_680_000.25
NOW_US = int(NOW * 1_000_000)
STATE_SETS = [frozenset({"expired"}), frozenset({"inflight"}), frozenset({"inflight", "expired"})]


@st.composite
def listings(draw):
    """Mostly a clean held queue (the short way), sometimes with what must send it the long way."""
    n = draw(st.integers(0, 80))
    first = draw(st.integers(10**15, 10**16 - 1000))
    ids = [str(first + i * draw(st.integers(1, 9))) for i in range(n)]
    # deadlines at now to the µs, around it, far off; in µs mostly, sometimes ms or s
    near = st.sampled_from([NOW_US - 1, NOW_US, NOW_US + 1])
    deadline = st.one_of(near, st.integers(NOW_US - 10**9, NOW_US + 10**9)).map(str)
    names = [f"{mid}.{draw(deadline)}" for mid in ids]
    extras = draw(st.lists(st.sampled_from([
        "ready", "twice", "new", "short_id", "ms", "s", "foreign", "dots", "zero_pad", "long"]), max_size=1))
    if ids and draw(st.integers(0, 3)) == 0:
        extras.append("ready")  # (often, and alone: an id also ready must never be called sole)
    pick = st.sampled_from(ids) if ids else st.just(str(first))
    for extra in extras:
        mid = draw(pick)
        names.append({
            "ready": mid,
            "twice": f"{mid}.{NOW_US - 5}",
            "new": f"{mid}.new",
            "short_id": f"{mid[:-1]}.{NOW_US - 5}",
            "ms": f"{mid}7.{NOW_US // 1000}",
            "s": f"{mid}8.{int(NOW)}",
            "foreign": "not-a-message",
            "dots": f"{mid}.1.2",
            "zero_pad": f"0{mid}.{NOW_US - 5}",
            "long": f"{mid}.{'9' * (layout.MAX_DIGITS + 1)}",
        }[extra])
    order = draw(st.permutations(names))
    return list(order)


@settings(max_examples=600, deadline=None)
@given(listings(), st.sampled_from(STATE_SETS))
def test_the_short_way_picks_what_the_general_way_picks(names, states):
    short = layout._held_sole(names, NOW, states)
    general = layout._held_any(names, frozenset(), NOW, states)
    if short is not None:
        assert short == general
    ids, rels, sole = layout.held_by_state(names, frozenset(), NOW, states)
    assert (ids, rels) == general
    if sole:  # each picked id has this one name in the listing, nothing else
        for mid, rel in zip(ids, rels):
            assert [n for n in names if n == mid or n.startswith(mid + ".")] == [rel]


@settings(max_examples=300, deadline=None)
@given(listings())
def test_a_requeue_of_the_expired_takes_as_many_as_the_count_says(names):
    """The count and a requeue by state judge a deadline by one rule (the client's: deadline <=
    now in its unit), to the µs: what ``stats`` says is expired is what ``requeue --expired`` takes."""
    pairs, _matched = layout.held_split([n for n in names if "." in n], frozenset())
    held = dict(pairs)
    inflight, expired, _next = layout._held_counts(list(held.values()), NOW)
    got = {s: layout.held_by_state(names, frozenset(), NOW, frozenset({s}))[0] for s in ("expired", "inflight")}
    assert (len(got["inflight"]), len(got["expired"])) == (inflight, expired)


def test_a_deadline_of_now_to_the_microsecond_is_expired():
    names = [f"{10**15 + 1}.{NOW_US}", f"{10**15 + 2}.{NOW_US + 1}", f"{10**15 + 3}.{NOW_US - 1}"]
    ids, _rels, sole = layout.held_by_state(names, frozenset(), NOW, {"expired"})
    assert sole and ids == [str(10**15 + 1), str(10**15 + 3)]
    # the same with a deadline in seconds beside them (each judged in its own unit, as floats)
    ids, _rels, _sole = layout.held_by_state([*names, f"{10**15 + 4}.{int(NOW) + 5}"], frozenset(), NOW,
                                             {"expired"})
    assert ids == [str(10**15 + 1), str(10**15 + 3)]


def test_what_sends_a_listing_the_general_way():
    base = [f"{10**15 + i}.{NOW_US - 10}" for i in range(100)]
    assert layout.held_by_state(base, frozenset(), NOW, {"expired"})[2] is True
    cases = {
        "an id twice": [*base, f"{10**15 + 5}.{NOW_US - 99}"],
        "an id also ready": [*base, str(10**15 + 5)],
        "being written": [*base, f"{10**15 + 5}.new"],
        "ids of two widths": [*base, f"{10**14}.{NOW_US - 10}"],
        "a name with two dots": [*base, f"{10**15 + 500}.1.2"],
    }
    for why, names in cases.items():
        assert layout._held_sole(names, NOW, {"expired"}) is None, why
        ids, rels, sole = layout.held_by_state(names, frozenset(), NOW, {"expired"})
        assert not sole, why
        assert (ids, rels) == layout._held_any(names, frozenset(), NOW, {"expired"}), why
    # a link or FIFO in the listing (irregular): the general way, which leaves it out
    ids, rels, sole = layout.held_by_state(base, frozenset({base[3]}), NOW, {"expired"})
    assert not sole and base[3] not in rels and len(rels) == 99


def test_the_short_way_orders_by_id_whatever_the_listing_order():
    now = time.time()
    names = [f"{10**15 + i}.{int((now - 60) * 1e6)}" for i in (5, 3, 9, 1, 7)]
    ids, rels, sole = layout.held_by_state(names, frozenset(), now, {"expired", "inflight"})
    assert sole and ids == [str(10**15 + i) for i in (1, 3, 5, 7, 9)]
    assert rels == [f"{mid}.{int((now - 60) * 1e6)}" for mid in ids]


#: a now whose µs, truncated, equal the deadline below, while the deadline in float seconds is
#: above now: the float rule called it in flight, the client's integer rule expired (found by review)
EDGE_NOW = 1760189265.2314079
EDGE_DL = str(int(EDGE_NOW * 1_000_000))


def test_a_deadline_is_judged_in_its_own_unit_whatever_else_is_listed(tmp_path):
    """The count (also a streamed count's chunk alone), the listed states and a requeue by state
    give one answer for one deadline, beside a deadline of another unit or not."""
    from qconsole.backends import open_target
    from qconsole.states import EXPIRED

    assert int(EDGE_DL) / 1_000_000 > EDGE_NOW  # (the case: floats disagree with the integers)
    expired_id = str(10**15 + 1)
    for others in ([], [f"{10**15 + 2}.{int(EDGE_NOW * 1000) + 5000}"]):  # beside a future ms deadline
        names = [f"{expired_id}.{EDGE_DL}", *others]
        assert layout.held_by_state(names, frozenset(), EDGE_NOW, {"expired"})[0] == [expired_id]
        assert layout.held_by_state(names, frozenset(), EDGE_NOW, {"inflight"})[0] == [n[:16] for n in others]
        dls = [n.partition(".")[2] for n in names]
        assert layout._held_counts(dls, EDGE_NOW)[:2] == (len(others), 1)
        assert layout._held_counts(dls[:1], EDGE_NOW)[:2] == (0, 1)
        root = tmp_path / str(len(others))
        (root / "q").mkdir(parents=True)
        for name in names:
            (root / "q" / name).write_text("x")
        target = open_target(str(root))
        scan = target.scan_queue("q", EDGE_NOW, collect=True)
        assert scan.counts[EXPIRED] == 1
        assert [m.id for m in scan.messages if m.state == EXPIRED] == [expired_id]
        cols = target.list_messages("q", EDGE_NOW)  # the console's list
        assert [m.id for m in cols if m.state == EXPIRED] == [expired_id]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([10, 13, 16, 19]), st.integers(-3, 3)), max_size=40),
       st.floats(1_700_000_000, 1_800_000_000))
def test_in_flight_and_expired_split_by_the_rule_in_deadline_order(rows, now):
    """``split_late`` (the lists' split) takes each held id by :func:`is_expired` and keeps the
    deadline order within each part, also where nanosecond deadlines tie as floats."""
    from qconsole.timeunits import vsqs_divisor

    held = {}
    for i, (width, off) in enumerate(rows):
        div = vsqs_divisor("9" * width)
        held[str(10**15 + i)] = str(int(now * div) + off).zfill(width)
    seconds = {mid: int(dl) / vsqs_divisor(dl) for mid, dl in held.items()}
    ordered = sorted(sorted(held, key=int), key=seconds.__getitem__)
    live, late = layout.split_late(ordered, held, now)
    assert late == [m for m in ordered if layout.is_expired(held[m], now)]
    assert live == [m for m in ordered if not layout.is_expired(held[m], now)]
