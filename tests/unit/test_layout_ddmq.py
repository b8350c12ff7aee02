"""ddmq names alone: waiting/work states, text delivery order, mixed-width priorities, dedup."""

from __future__ import annotations

import os

import pytest

from qconsole.backends.ddmq import layout as ddmq
from qconsole.backends.fs.listing import QC_TEMP_PREFIX
from qconsole.states import EXPIRED, FOREIGN, INFLIGHT, READY, WRITING
from qconsole.timeunits import ddmq_created

NOW = 1_700_000_000.0
QN = "1700000000123456"  # str(time.time()) without the dot
U = ["%032x" % i for i in range(1, 20)]


def _queue(tmp_path, waiting=(), work=(), dirs=()):
    q = tmp_path / "q"
    (q / "work").mkdir(parents=True)
    (q / "ddmq.yaml").write_text("")
    (tmp_path / "ddmq.yaml").write_text("")
    for n in waiting:
        (q / n).write_text("{}")
    for n in work:
        (q / "work" / n).write_text("{}")
    for d in dirs:
        (q / d).mkdir()
    return str(tmp_path)


def test_parse_names():
    assert ddmq.parse_waiting(f"999.{QN}.ddmq{U[0]}") == ("999", QN, U[0])
    assert ddmq.parse_work(f"1700000600.10.{QN}.ddmq{U[0]}") == ("1700000600", "10", QN, U[0])
    for bad in ("ddmq.yaml", f"x.{QN}.ddmq{U[0]}", f"9.{QN}.ddmq", f"9.{QN}.txt", f"9.{QN}.ddmq{U[0]}.bak"):
        assert ddmq.parse_waiting(bad) is None
    assert ddmq.parse_work(f"9.{QN}.ddmq{U[0]}") is None
    assert ddmq.waiting_name(5, QN, U[1]) == f"5.{QN}.ddmq{U[1]}"
    assert ddmq.work_name(17, 5, QN, U[1]) == f"17.5.{QN}.ddmq{U[1]}"


def test_queue_number_is_epoch_seconds_then_fraction():
    assert ddmq_created("17000000001234") == 1700000000.1234
    assert ddmq_created("17000000001") == 1700000000.1
    assert ddmq_created("123") is None


def test_states_counts_and_deadlines(tmp_path):
    root = _queue(
        tmp_path,
        waiting=[f"999.{QN}.ddmq{U[0]}", f"5.{QN}1.ddmq{U[1]}", f"999.{QN}2.ddmq{U[2]}",
                 f"{QC_TEMP_PREFIX}publish-abc", "notes.txt", "ddmq.yaml.intermediate"],
        work=[f"1700000060.999.{QN}.ddmq{U[3]}", f"1700000030.999.{QN}.ddmq{U[4]}",
              f"1699999990.5.{QN}.ddmq{U[5]}",
              f"1700000000.5.{QN}.ddmq{U[6]}"],  # deadline == now: ddmq cleans only when <
    )
    scan = ddmq.scan_queue(root, "q", NOW, collect=True)
    assert scan.counts == {READY: 3, INFLIGHT: 3, EXPIRED: 1, "delayed": 0, WRITING: 1, FOREIGN: 1}
    assert scan.next_deadline == 1700000000.0
    assert scan.oldest_ready_created == ddmq_created(QN)
    assert scan.by_priority == {
        "5": {READY: 1, INFLIGHT: 1, EXPIRED: 1},
        "999": {READY: 2, INFLIGHT: 2, EXPIRED: 0},
    }
    assert [(m.id, m.state) for m in scan.messages] == [
        (U[1], READY), (U[0], READY), (U[2], READY),
        (U[6], INFLIGHT), (U[4], INFLIGHT), (U[3], INFLIGHT),
        (U[5], EXPIRED),
    ]
    m = scan.messages[5]
    assert m.deadline == 1700000060.0 and m.relpath == f"work/1700000060.999.{QN}.ddmq{U[3]}"
    assert m.priority == 999 and m.priority_text == "999"
    assert any("mixed-width" in w for w in scan.warnings)  # "5" beside "999"


def test_text_order_puts_10_before_9(tmp_path):
    names = [f"9.{QN}.ddmq{U[0]}", f"10.{QN}.ddmq{U[1]}", f"999.{QN}.ddmq{U[2]}", f"9.{QN}0.ddmq{U[3]}"]
    scan = ddmq.scan_queue(_queue(tmp_path, waiting=names), "q", NOW, collect=True)
    assert [m.priority_text for m in scan.ready_messages()] == ["10", "9", "9", "999"]
    assert [m.name for m in scan.ready_messages()] == sorted(names)
    assert len(scan.warnings) == 1 and "priority 10 is taken before 9" in scan.warnings[0]


def test_same_width_priorities_do_not_warn(tmp_path):
    scan = ddmq.scan_queue(_queue(tmp_path, waiting=[f"100.{QN}.ddmq{U[0]}", f"999.{QN}.ddmq{U[1]}"]), "q", NOW)
    assert scan.warnings == []


def test_message_in_waiting_and_work_counts_once(tmp_path):
    root = _queue(tmp_path, waiting=[f"9.{QN}.ddmq{U[0]}", f"9.{QN}.ddmq{U[1]}"],
                  work=[f"1700000600.9.{QN}.ddmq{U[0]}"])
    scan = ddmq.scan_queue(root, "q", NOW, collect=True)
    assert scan.counts[READY] == 1 and scan.counts[INFLIGHT] == 1 and scan.total == 2
    assert [m.id for m in scan.messages] == [U[1], U[0]]


def test_foreign_and_misnamed_files_are_reported(tmp_path):
    root = _queue(tmp_path, waiting=[f"x.{QN}.ddmq{U[0]}", "junk"],
                  work=["core.1", f"9.{QN}.ddmq{U[1]}", f"{QC_TEMP_PREFIX}claim"],
                  dirs=[f"9.{QN}.ddmq{U[2]}"])
    os.mkfifo(tmp_path / "q" / "work" / f"1700000600.9.{QN}.ddmq{U[3]}")
    scan = ddmq.scan_queue(root, "q", NOW, check_types=True)
    assert scan.counts[FOREIGN] == 6 and scan.counts[WRITING] == 1 and scan.total == 1
    text = "\n".join(scan.errors)
    assert "matches ddmq's *.ddmq* glob" in text
    assert "ddmq's clean() will fail" in text
    assert text.count("not a regular file") == 2
    # by names alone the directory is still caught (it adds a link to q/), the FIFO in
    # work/ counts as what its name says, as ddmq's own listing would take it
    fast = ddmq.scan_queue(root, "q", NOW)
    assert fast.counts[FOREIGN] == 5 and fast.counts[INFLIGHT] == 1 and fast.total == 2
    assert "\n".join(fast.errors).count("not a regular file") == 1


def test_missing_work_dir_is_an_error_but_waiting_is_counted(tmp_path):
    root = _queue(tmp_path, waiting=[f"9.{QN}.ddmq{U[0]}"])
    os.rmdir(tmp_path / "q" / "work")
    scan = ddmq.scan_queue(root, "q", NOW)
    assert scan.counts[READY] == 1 and any("q/work" in e for e in scan.errors)


def test_queue_names_need_yaml_and_work_and_skip_dots_and_symlinks(tmp_path, count_path):
    root = _queue(tmp_path)
    for d in ("a", ".hidden"):
        (tmp_path / d / "work").mkdir(parents=True)
        (tmp_path / d / "ddmq.yaml").write_text("")
    (tmp_path / "plain").mkdir()
    os.symlink(tmp_path / "a", tmp_path / "b")
    names, errors = ddmq.list_queue_names(root)
    assert names == ["a", "q"]
    assert errors == ["b: symlink not followed"]


@pytest.mark.parametrize("planted", ["dev-zero", "dangling", "fifo", "directory"])
def test_a_queue_whose_ddmq_yaml_is_no_regular_file_is_named_not_left_out_silently(tmp_path, planted, count_path):
    """ddmq's check_dir skips such a directory (os.path.isfile), and so does qconsole; a planted
    ddmq.yaml -> /dev/zero made a queue of messages vanish from stats and check without a word."""
    root = _queue(tmp_path, waiting=[f"9.{QN}.ddmq{U[0]}"])
    (tmp_path / "q" / "ddmq.yaml").unlink()
    cfg = tmp_path / "q" / "ddmq.yaml"
    if planted == "dev-zero":
        os.symlink("/dev/zero", cfg)
    elif planted == "dangling":
        os.symlink(tmp_path / "nowhere", cfg)
    elif planted == "fifo":
        os.mkfifo(cfg)
    else:
        cfg.mkdir()
    (tmp_path / "plain" / "work").mkdir(parents=True)  # no ddmq.yaml at all: no queue, no word
    names, errors = ddmq.list_queue_names(root)
    assert names == []
    assert errors == ["q: ddmq.yaml is no regular file (a directory, a FIFO, a link to a device or to nothing): "
                      "not a queue, not counted"]


@pytest.mark.parametrize("deadline, expired", [(1699999999, True), (1700000000, False), (1700000001, False)])
def test_expiry_follows_ddmq_clean(deadline, expired):
    assert ddmq.is_expired(deadline, NOW + 0.9) is expired
