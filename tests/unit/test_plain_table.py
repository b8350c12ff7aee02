"""The plain columns piped `ls` prints: alignment by terminal cells, escaped cells, the terminal test."""

from __future__ import annotations

import io

import pytest

from qconsole.model import Message
from qconsole.output.plain import aligned, cell_width, to_terminal
from qconsole.output.tables import messages_plain


def test_cell_width_counts_wide_and_combining_characters():
    assert cell_width("abc") == 3
    assert cell_width("日本") == 4
    assert cell_width("e\u0301") == 1


def test_aligned_pads_by_cells_and_right_aligns_numbers():
    lines = aligned(("name", "n"), [("日本", "7"), ("abcdef", "123")], (False, True))
    assert lines == ["name      n", "日本      7", "abcdef  123"]
    assert len({cell_width(line) for line in lines}) == 1


def test_plain_rows_escape_hostile_ids_and_keep_one_line_each():
    evil = "123\x1b]52;c;aGk=\x07\n456"
    msgs = [Message(queue="q", id=evil, state="ready", relpath=evil, layout="vsqs")]
    lines = messages_plain(msgs, 0.0, {})
    assert len(lines) == 2 and "\x1b" not in lines[1] and "\n" not in lines[1]
    assert "123\\e]52;c;aGk=\\x07\\n456" in lines[1]


@pytest.mark.parametrize("env, tty, expected", [
    ({}, False, False), ({}, True, True), ({"FORCE_COLOR": "1"}, False, True), ({"FORCE_COLOR": ""}, True, False),
    ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, True, False), ({"TTY_COMPATIBLE": "1"}, False, True),
])
def test_to_terminal_follows_richs_rules(monkeypatch, env, tty, expected):
    for key in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    assert to_terminal(Stream()) is expected


def test_ids_with_spaces_or_empty_stay_one_column():
    msgs = [Message(queue="q", id=mid, state="ready", relpath=mid or "x", layout="rsmq")
            for mid in ("a b c", "", "x\u3000y", "plain")]
    rows = [line.split() for line in messages_plain(msgs, 0.0, {})[1:]]
    assert [r[1] for r in rows] == ["a\\x20b\\x20c", '""', "x\\u3000y", "plain"]
    assert {len(r) for r in rows} == {len(rows[-1])}  # every row as many words as the plain one
