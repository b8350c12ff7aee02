"""The fast pretty JSON writer gives exactly what ``json.dumps(indent=2, ensure_ascii=True)`` gives."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from qconsole.output.jsontext import dumps, dumps_pretty

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.text())
keys = st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.floats())
docs = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=4), st.tuples(kids, kids),
                                                    st.dictionaries(keys, kids, max_size=4)), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(docs)
def test_pretty_equals_the_standard_library(doc):
    assert dumps_pretty(doc) == json.dumps(doc, indent=2, ensure_ascii=True)
    assert dumps(doc, pretty=False) == json.dumps(doc, ensure_ascii=True)


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
