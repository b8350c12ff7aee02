"""The fast pretty JSON writer gives exactly what ``json.dumps(indent=2, ensure_ascii=True)`` gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qconsole.output.jsontext import dumps, dumps_pretty, finite

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.text())
keys = st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.floats())
docs = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=4), st.tuples(kids, kids),
                                                    st.dictionaries(keys, kids, max_size=4)), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(docs)
def test_pretty_equals_the_standard_library(doc):
    """The standard library's text, but NaN/Infinity values written null: always strict JSON."""
    assert dumps_pretty(doc) == json.dumps(finite(doc), indent=2, ensure_ascii=True)
    assert dumps(doc, pretty=False) == json.dumps(finite(doc), ensure_ascii=True)
    for text in (dumps_pretty(doc), dumps(doc, pretty=False)):
        json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the output"))


def test_what_it_does_not_know_gets_the_standard_answer():
    class Odd:
        pass

    for doc in ({"a": Odd()}, {(1, 2): 1}):
        try:
            want = json.dumps(doc, indent=2, ensure_ascii=True)
        except TypeError as err:
            want = type(err)
        try:
            got = dumps_pretty(doc)
        except TypeError as err:
            got = type(err)
        assert got == want


# The stats document's own writer (stats_json.render_pretty) against the generic path, for
# scans of every shape a backend produces: odd names, None/float figures, priorities,
# RSMQ extras, warnings and errors, and values the fast writer must hand back.
from qconsole.model import QueueScan, RootScan  # noqa: E402
from qconsole.output.stats_json import render_pretty, stats_document  # noqa: E402
from qconsole.states import STATES  # noqa: E402

small = st.integers(min_value=0, max_value=10**12)
maybe_time = st.one_of(st.none(), st.floats(min_value=0, max_value=4e9, allow_nan=False))
lines = st.lists(st.text(max_size=12), max_size=3)


@st.composite
def queue_scans(draw):
    q = QueueScan(draw(st.text(max_size=12)), draw(st.sampled_from(["vsqs", "ddmq", "rsmq"])), 1.7e9)
    q.counts.update({s: draw(small) for s in STATES})
    q.oldest_ready_created = draw(maybe_time)
    q.next_deadline = draw(maybe_time)
    q.by_priority = draw(st.one_of(st.none(), st.dictionaries(st.text(max_size=4), st.dictionaries(
        st.sampled_from(["ready", "inflight", "expired"]), st.one_of(small, st.booleans()), max_size=3), max_size=3)))
    q.extras = draw(st.one_of(st.none(), st.dictionaries(st.text(max_size=6), scalars, max_size=4)))
    # a line that is not a string (none is, from a backend) goes the generic way
    q.warnings = draw(st.one_of(lines, st.lists(st.one_of(st.text(max_size=4), small, st.none()), max_size=3)))
    q.errors = draw(lines)
    return q


@settings(max_examples=300, deadline=None)
@given(st.lists(queue_scans(), max_size=5), st.sampled_from([1, 2]), st.text(max_size=10), lines)
def test_stats_writer_equals_the_generic_document(queues, version, root, errors):
    scan = RootScan(root, "vsqs", 1.7e9 + 0.25, 0.0123, queues, errors)
    assert render_pretty(scan, version) == dumps_pretty(stats_document(scan, version))


def test_stats_writer_hands_odd_values_to_the_generic_writer():
    q = QueueScan("q", "vsqs", 1.7e9)
    q.counts["ready"] = True  # not an int: the generic writer says `true`, as json does
    q.extras = {"x": object()}
    scan = RootScan("/r", "vsqs", 1.7e9, 0.1, [q, QueueScan("p", "vsqs", 1.7e9)])
    q.extras = None
    assert render_pretty(scan) == json.dumps(stats_document(scan), indent=2, ensure_ascii=True)
    q.extras = {"x": {1, 2}}  # json cannot write a set: the same error either way
    try:
        want = json.dumps(stats_document(scan), indent=2, ensure_ascii=True)
    except TypeError as err:
        want = type(err)
    try:
        got = render_pretty(scan)
    except TypeError as err:
        got = type(err)
    assert got == want
