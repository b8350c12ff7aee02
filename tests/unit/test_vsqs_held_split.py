"""VSQS held names (``<id>.<deadline>``) are matched by a split for a few names and by the
pattern for many: both ways must take exactly the same names, hostile ones included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from qconsole.backends.vsqs import layout

MAX = layout.MAX_DIGITS
digits = st.text(alphabet="0123456789", min_size=0, max_size=MAX + 2)
# Unicode digits (str.isdigit says yes, the pattern's [0-9] no), dots, newlines, signs, spaces
odd = st.text(alphabet="0123456789.\n +-_x\u0661\u00b2\udcff", max_size=12)
names = st.one_of(
    st.builds(lambda a, b: f"{a}.{b}", digits, digits),
    st.builds(lambda a, b, c: f"{a}.{b}.{c}", digits, digits, digits),
    st.builds(lambda a: f"{a}.new", digits),
    digits,
    odd,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(names, max_size=layout._SPLIT_HELD), st.data())
def test_split_and_pattern_take_the_same_held_names(listing, data):
    irregular = set(data.draw(st.lists(st.sampled_from(listing), max_size=3))) if listing else set()
    by_split = layout.held_split(listing, irregular)
    saved = layout._SPLIT_HELD
    layout._SPLIT_HELD = -1  # every list the pattern's way
    try:
        by_pattern = layout.held_split(listing, irregular)
    finally:
        layout._SPLIT_HELD = saved
    assert by_split == by_pattern


def test_examples():
    pairs, matched = layout.held_split(["1.2", "1.2.3", "\u0661.2", "1.", ".2", "1.new", "3." + "9" * (MAX + 1), "7.8"],
                                       {"7.8"})
    assert pairs == [("1", "2")] and matched == ["1.2"]


def _fields(scan):
    return {f: getattr(scan, f) for f in type(scan).__slots__}


def test_count_many_takes_only_true_held_names_the_short_way(tmp_path):
    # names as long as a held one (2w + 1) but without the dot, or with it elsewhere: the short
    # way must not count them as held; each queue counts exactly as the exact path counts it
    w = 16
    ready = [str(1_700_000_000_000_000 + i) for i in range(5)]
    held = f"{1_700_000_000_000_009}.{1_700_000_100_000_000}"
    odd = {
        "no_dot": "9" * (2 * w + 1),
        "dot_moved": f"{1_700_000_000_000_010}0.{1_700_000_100_000_00}",
        "two_dots": f"{1_700_000_000_000_011}.{1_700_000_100_000}.0",
        "new_moved": f"{1_700_000_000_000_012}n.ew"[: w + 4],
    }
    for qname, name in odd.items():
        q = tmp_path / qname
        q.mkdir()
        for n in [*ready, held, name]:
            (q / n).touch()
    names = sorted(odd)
    now = 1_700_000_050.0
    many = layout.count_many(str(tmp_path), names, now)
    for name, scan in zip(names, many):
        assert _fields(scan) == _fields(layout.scan_queue(str(tmp_path), name, now)), name


held_like = st.one_of(  # mostly true held names (a requeue pass's listing), now and then not
    st.builds(lambda a, b: f"{a}.{b}", st.integers(0, 10 ** MAX - 1), st.integers(0, 10 ** MAX - 1)),
    st.builds(lambda a, b: f"{a}.{b}", st.integers(0, 99), st.integers(0, 99)),
    names,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(held_like, min_size=layout._SPLIT_HELD + 1, max_size=200), st.data())
def test_many_names_are_matched_exactly_as_the_pattern_matches_each(listing, data):
    # more than _SPLIT_HELD names go column-wise first (_held_bulk), the pattern when any is odd
    if data.draw(st.booleans()):  # all held: the column-wise way takes them all
        listing = [n for n in listing if layout._held_re().fullmatch(n)] or ["1.2"]
        listing += ["7.9"] * (layout._SPLIT_HELD + 1 - len(listing))
    irregular = set(data.draw(st.lists(st.sampled_from(listing), max_size=3)))
    full = layout._held_re().fullmatch
    want_matched = [n for n in listing if full(n) and n not in irregular]
    assert layout.held_split(listing, irregular) == ([full(n).groups() for n in want_matched], want_matched)


def test_the_column_wise_way_refuses_what_the_pattern_refuses():
    ok = [f"{i}.{i + 1}" for i in range(100)]
    for odd in ("1.2.3", "\u0661.2", "1.", ".2", "12", "1.new", "3." + "9" * (MAX + 1), "9" * (MAX + 1) + ".3",
                "1.2\n", "+1.2", "1.\u00b2"):
        assert layout._held_bulk(ok + [odd]) is None, odd
    assert layout._held_bulk(ok) == [(f"{i}", f"{i + 1}") for i in range(100)]
