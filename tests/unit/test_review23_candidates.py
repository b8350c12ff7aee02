"""Review of the ddmq root counted before its queues are looked into (queue_candidates,
count_many(unchecked=True)) and of the listings that open a queue directory O_NOFOLLOW."""

from __future__ import annotations

import os

import pytest

from qconsole.backends import open_target as Root
from qconsole.backends.ddmq import layout as ddmq

QN = "1700000000123456"
NOW = 1_750_000_000.25


def _queue(path, ready=2):
    (path / "work").mkdir(parents=True)
    (path / "ddmq.yaml").write_text("")
    for i in range(ready):
        (path / f"999.{QN}{i}.ddmq{i:032x}").write_text("{}")


def _odd_root(tmp_path):
    """A ddmq root whose root-level lines come from both kinds of entries: symlinks (judged
    where the root is listed) and directories that are no queue (judged where counted)."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "ddmq.yaml").write_text("")
    for name in ("q0", "q1", "q2"):
        _queue(root / name)
    os.symlink(root / "q0", root / "zz-linked-queue")  # a symlink's line sorts last
    for name in ("a-fifo", "m-fifo", "c-fifo", "k-fifo"):
        (root / name / "work").mkdir(parents=True)
        os.mkfifo(root / name / "ddmq.yaml")
    (root / "b-cfgdir" / "work").mkdir(parents=True)
    (root / "b-cfgdir" / "ddmq.yaml").mkdir()
    (root / "d-worklink" / "x").mkdir(parents=True)
    (root / "d-worklink" / "ddmq.yaml").write_text("")
    os.symlink("x", root / "d-worklink" / "work")
    return str(root)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("check_types", [False, True])
def test_root_lines_come_in_the_same_order_as_the_checked_listing_gives(c_module, tmp_path, monkeypatch, jobs,
                                                                          check_types):
    """`check` names the first root line on its status line and `stats` prints them in order:
    with the C reader the symlinks' lines came first, then the other directories' (sorted),
    while the checked listing gave them in the directory's own (hash) order: the Nagios line
    named another entry depending on which path counted the root."""
    root = _odd_root(tmp_path)
    deferred = Root(root).scan(now=NOW, jobs=jobs, check_types=check_types)
    monkeypatch.setattr(ddmq, "queue_candidates", lambda root: None)
    checked = Root(root).scan(now=NOW, jobs=jobs, check_types=check_types)
    assert deferred.errors == checked.errors
    assert deferred.errors == sorted(deferred.errors)  # the same on every machine, whatever the hash order
    assert [q.name for q in deferred.queues] == [q.name for q in checked.queues] == ["q0", "q1", "q2"]


def test_check_status_line_names_the_same_first_problem_either_way(c_module, tmp_path, monkeypatch):
    from qconsole.fastpath import check_line

    root = _odd_root(tmp_path)
    monkeypatch.setattr("time.time", lambda: NOW)
    deferred = check_line(root, "auto", None, {}, check_types=False, jobs=2)
    monkeypatch.setattr(ddmq, "queue_candidates", lambda root: None)
    checked = check_line(root, "auto", None, {}, check_types=False, jobs=2)
    assert deferred == checked
    assert deferred[1].startswith("QCONSOLE WARNING - root: a-fifo: ddmq.yaml is no regular file")


def test_sizing_a_root_for_the_pool_follows_no_work_symlink_out_of_it(c_module, tmp_path, monkeypatch):
    """With the C reader the root's sub-directories reach the pool's sizing (parallel.arrange:
    a stat of each queue's directory and work/) before they are judged: a directory whose work/
    is a symlink had that link followed out of the root (a stat of wherever it points: a dead
    NFS mount hangs there), which the checked listing never did. It is still left out, with its
    line, and nothing behind a link is looked up."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "ddmq.yaml").write_text("")
    for name in ("q0", "q1"):
        _queue(root / name)
    outside = tmp_path / "outside"
    _queue(outside)
    (root / "linked-work").mkdir()
    (root / "linked-work" / "ddmq.yaml").write_text("")
    os.symlink(outside / "work", root / "linked-work" / "work")
    followed: list[str] = []
    real_stat = os.stat

    def stat(path, *args, dir_fd=None, follow_symlinks=True):
        if follow_symlinks and isinstance(path, str) and os.path.basename(path) == "work":
            if os.path.islink(path if dir_fd is None else os.path.join(f"/proc/self/fd/{dir_fd}", path)):
                followed.append(path)
        return real_stat(path, *args, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(os, "stat", stat)
    scan = Root(str(root)).scan(now=NOW, jobs=2)
    assert followed == []
    assert [q.name for q in scan.queues] == ["q0", "q1"]
    assert scan.errors == ["linked-work: work/ is a symlink, not followed"]
