"""Ids on stdin (``qconsole delete q -``): a plain list is taken whole in a few C passes, and
anything else line by line. Both ways must give the same ids, or refuse with the same line."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qconsole import change_commands as cc

pieces = st.sampled_from([b"a", b"17", b"ddmqAb3", b"\n", b"\n", b"\r\n", b"\r", b"\0", b" ", b"\t", b"\xff",
                          b"\xc3\xa9", b"\xe2\x80\xa8", b"\xc3", b"x" * 1100, b"\xf0\x9f\x98\x80" * 300])


def _outcome(read, data: bytes):
    try:
        return read(io.BytesIO(data))
    except cc.UsageError as err:
        return ("refused", str(err))


@settings(max_examples=600, deadline=None)
@given(st.lists(pieces, max_size=40).map(b"".join), st.sampled_from([cc.BULK_STDIN, 1, 5, 64]))
def test_the_whole_read_equals_the_line_by_line_read(data, bulk):
    # a small BULK_STDIN: the line-by-line way takes over from what was read whole already
    saved, cc.BULK_STDIN = cc.BULK_STDIN, bulk
    try:
        assert _outcome(cc.read_ids, data) == _outcome(cc._read_id_lines, data)
    finally:
        cc.BULK_STDIN = saved


def test_plain_ids_blank_lines_and_a_last_line_without_its_end():
    assert cc.read_ids(io.BytesIO(b"a1\n\n  \nb2 \n\xc3\xa9\nc3")) == ["a1", "b2 ", "\u00e9", "c3"]


@pytest.mark.parametrize("data, words", [
    (b"a\nb\0c\n", "line 2 holds a NUL byte"),
    (b"a\n" + b"x" * (cc.MAX_ID_LINE + 1) + b"\n", "line 2 is longer than"),
    (b"a\n\xff\n", "line 2 is not UTF-8"),
], ids=["nul", "long", "not-utf8"])
def test_what_is_refused_is_named_with_its_line(data, words):
    with pytest.raises(cc.UsageError, match=words):
        cc.read_ids(io.BytesIO(data))


def test_more_lines_than_allowed_are_refused(monkeypatch):
    monkeypatch.setattr(cc, "MAX_STDIN_IDS", 3)
    with pytest.raises(cc.UsageError, match="more than 3 lines"):
        cc.read_ids(io.BytesIO(b"a\nb\nc\nd\n"))
    assert cc.read_ids(io.BytesIO(b"a\nb\nc\n")) == ["a", "b", "c"]


def test_a_non_blocking_stdin_with_nothing_to_read_gives_no_ids():
    import os

    r, w = os.pipe()
    os.set_blocking(r, False)
    try:
        with io.open(r, "rb") as stream:
            assert cc.read_ids(stream) == []
    finally:
        os.close(w)
