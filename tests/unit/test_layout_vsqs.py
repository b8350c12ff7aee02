"""VSQS names alone: states, µs vs ms ids, de-duplication during renames, foreign files."""

from __future__ import annotations

import os

import pytest

from qconsole.backends.vsqs import layout as vsqs
from qconsole.backends.fs.listing import QC_TEMP_PREFIX
from qconsole.states import EXPIRED, FOREIGN, INFLIGHT, READY, WRITING
from qconsole.timeunits import vsqs_divisor

NOW = 1_700_000_000.0
US = 1_700_000_000_000_000  # NOW in µs (16 digits)
MS = 1_700_000_000_000  # NOW in ms (13 digits)


def _queue(tmp_path, names, dirs=()):
    q = tmp_path / "q"
    q.mkdir()
    for n in names:
        (q / n).write_bytes(b"x")
    for d in dirs:
        (q / d).mkdir()
    return str(tmp_path)


@pytest.mark.parametrize(
    "name, parsed",
    [
        ("1700000000000000", (READY, "1700000000000000", None)),
        ("1700000000000000.new", (WRITING, "1700000000000000", None)),
        ("1700000000000000.1700000000600000", ("held", "1700000000000000", "1700000000600000")),
        ("abc", None),
        ("123.txt", None),
        ("123.456.789", None),
        (".123", None),
        ("١٢٣", None),  # non-ASCII digits: int() takes them, but no writer makes them
    ],
)
def test_parse_name(name, parsed):
    assert vsqs.parse_name(name) == parsed


def test_unit_from_digit_count():
    assert vsqs_divisor(str(US)) == 1e6
    assert vsqs_divisor(str(MS)) == 1e3
    assert vsqs_divisor("1700000000") == 1.0


def test_states_in_microseconds(tmp_path):
    root = _queue(tmp_path, [
        str(US - 3), str(US - 1), str(US - 2),
        f"{US - 10}.{US + 5_000_000}",  # in flight, 5 s left
        f"{US - 11}.{US + 2_000_000}",  # in flight, 2 s left
        f"{US - 12}.{US - 1_000_000}",  # expired 1 s ago
        f"{US - 13}.{US}",  # deadline == now: the client requeues (<=), so expired
        f"{US + 1}.new",
        f"{QC_TEMP_PREFIX}publish-1",
        "README", "core.123",
    ])
    scan = vsqs.scan_queue(root, "q", NOW, collect=True)
    assert scan.counts == {READY: 3, INFLIGHT: 2, EXPIRED: 2, "delayed": 0, WRITING: 2, FOREIGN: 2}
    assert scan.total == 9  # foreign files are not messages
    assert scan.id_unit == 1e6
    assert scan.next_deadline == NOW + 2
    assert scan.oldest_ready_created == (US - 3) / 1e6
    assert not scan.errors and not scan.warnings
    states = [(m.id, m.state) for m in scan.messages]
    assert states == [
        (str(US - 3), READY), (str(US - 2), READY), (str(US - 1), READY),
        (str(US - 11), INFLIGHT), (str(US - 10), INFLIGHT),
        (str(US - 12), EXPIRED), (str(US - 13), EXPIRED),
        (str(US + 1), WRITING),
    ]
    inflight = scan.messages[3]
    assert inflight.deadline == NOW + 2 and inflight.relpath == f"{US - 11}.{US + 2_000_000}"
    # a whole-second clock (an int) gives the same messages
    by_int = vsqs.scan_queue(root, "q", int(NOW), collect=True)
    assert [(m.id, m.state, m.deadline) for m in by_int.messages] == [(m.id, m.state, m.deadline) for m in scan.messages]


def test_states_in_milliseconds(tmp_path):
    root = _queue(tmp_path, [str(MS - 2), str(MS - 1), f"{MS - 5}.{MS + 30_000}", f"{MS - 6}.{MS - 1}"])
    scan = vsqs.scan_queue(root, "q", NOW, collect=True)
    assert scan.id_unit == 1e3
    assert scan.counts[READY] == 2 and scan.counts[INFLIGHT] == 1 and scan.counts[EXPIRED] == 1
    assert scan.next_deadline == NOW + 30
    assert scan.oldest_ready_created == NOW - 0.002
    assert scan.held_messages()[0].deadline == NOW + 30
    assert not scan.warnings


def test_mixed_ms_and_us_ids_warn_and_sort_numerically(tmp_path):
    root = _queue(tmp_path, [str(US), str(MS)])
    scan = vsqs.scan_queue(root, "q", NOW + 1, collect=True)
    assert any("mixed id units" in w for w in scan.warnings)
    assert [m.id for m in scan.ready_messages()] == [str(MS), str(US)]
    # both read as the same instant in their own unit
    assert {m.created_at for m in scan.ready_messages()} == {NOW}


def test_id_listed_twice_during_a_rename_counts_once(tmp_path):
    # a listing taken while a consumer renames 123 -> 123.456 can see both names
    root = _queue(tmp_path, [str(US), f"{US}.{US + 9_000_000}", str(US + 5), f"{US + 5}.new", str(US + 7)])
    scan = vsqs.scan_queue(root, "q", NOW, collect=True)
    assert scan.counts[READY] == 2  # US+5 (publish finished), US+7
    assert scan.counts[INFLIGHT] == 1
    assert scan.counts[WRITING] == 0
    assert scan.total == 3
    assert len({m.id for m in scan.messages}) == len(scan.messages) == 3


def test_non_regular_entries_named_like_messages_are_foreign_with_an_error(tmp_path):
    root = _queue(tmp_path, [str(US)], dirs=[str(US + 1)])
    os.mkfifo(tmp_path / "q" / f"{US + 2}.{US + 9}")
    os.symlink("/etc/passwd", tmp_path / "q" / str(US + 3))
    scan = vsqs.scan_queue(root, "q", NOW)
    assert scan.counts[READY] == 1
    assert scan.counts[FOREIGN] == 3
    assert len(scan.errors) == 3 and all("not a regular file" in e for e in scan.errors)


def test_by_names_alone_only_directories_are_caught(tmp_path):
    # counting reads no entry type: a FIFO or symlink counts as its name says (as the
    # client's own listing would), a directory still shows in the queue's link count
    root = _queue(tmp_path, [str(US)])
    os.mkfifo(tmp_path / "q" / f"{US + 2}.{US + 9}")
    os.symlink("/etc/passwd", tmp_path / "q" / str(US + 3))
    fast = vsqs.scan_queue(root, "q", NOW)
    assert (fast.counts[READY], fast.counts[FOREIGN], fast.errors) == (2, 0, [])
    typed = vsqs.scan_queue(root, "q", NOW, check_types=True)
    assert (typed.counts[READY], typed.counts[FOREIGN], len(typed.errors)) == (1, 2, 2)
    os.mkdir(tmp_path / "q" / str(US + 4))
    fast = vsqs.scan_queue(root, "q", NOW)
    assert (fast.counts[READY], fast.counts[FOREIGN], len(fast.errors)) == (1, 3, 3)


def test_error_list_is_capped(tmp_path):
    root = _queue(tmp_path, [], dirs=[str(US + i) for i in range(30)])
    scan = vsqs.scan_queue(root, "q", NOW)
    assert scan.counts[FOREIGN] == 30
    assert len(scan.errors) == 21 and scan.errors[-1] == "... and 10 more"


def test_empty_queue(tmp_path):
    scan = vsqs.scan_queue(_queue(tmp_path, []), "q", NOW, collect=True)
    assert scan.total == 0 and scan.messages == [] and scan.id_unit is None
    assert scan.oldest_ready_created is None and scan.next_deadline is None


def test_unreadable_queue_is_an_error_not_a_crash(tmp_path):
    scan = vsqs.scan_queue(str(tmp_path), "missing", NOW)
    assert scan.total == 0 and scan.errors and "cannot read missing" in scan.errors[0]


def test_queue_names_skip_dot_dirs_files_and_symlinks(tmp_path):
    for d in ("jobs", "alpha", ".qconsole", ".snapshot"):
        (tmp_path / d).mkdir()
    (tmp_path / "notes.txt").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    os.symlink(outside, tmp_path / "linked")
    names, errors = vsqs.list_queue_names(str(tmp_path))
    assert names == ["alpha", "jobs"]
    assert errors == ["linked: symlink not followed"]
