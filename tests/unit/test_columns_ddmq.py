"""One ddmq queue as columns (ddmq list_columns): the same messages, counts and errors as the
exact collected scan on random queues with leftovers, hostile names and ids in both places; a
relisting by difference equals a fresh listing; unchanged directories (the queue's and work/)
are not listed again; and the real ddmq 0.9.14 client's queue reads the same."""

from __future__ import annotations

import os
import random
import time
import uuid
from typing import Any

import pytest

from peers import ddmq_broker
from qconsole.backends import open_target
from qconsole.backends.ddmq import columns as dcols
from qconsole.backends.ddmq import layout as ddmq_layout
from qconsole.backends.fs import root as fs_root
from qconsole.columns import MessageColumns, NameTails

NOW = time.time()


def touch(path: str, data: bytes = b"{}") -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def seen(msgs: Any) -> list[tuple[Any, ...]]:
    return [(m.id, m.state, m.relpath, m.deadline, m.created_at, m.priority, m.priority_text) for m in msgs]


def agrees(backend: Any, cols: MessageColumns, queue: str = "q", now: float = NOW) -> None:
    """Columns say what a collected scan taken now says: rows, counts, priorities, warnings, errors."""
    scan = backend.scan_queue(queue, now, collect=True)
    assert seen(cols) == seen(scan.messages)
    assert cols.scan.counts == scan.counts
    assert cols.scan.by_priority == scan.by_priority
    assert cols.scan.oldest_ready_created == scan.oldest_ready_created
    assert cols.scan.next_deadline == scan.next_deadline
    assert cols.scan.warnings == scan.warnings
    assert sorted(cols.scan.errors) == sorted(scan.errors)
    # every row is found again by its id (the id column is a view over the file names)
    for i in random.Random(len(cols)).sample(range(len(cols)), min(len(cols), 20)):
        assert cols.index_of(cols[i].id) == i


def qn(t: float) -> str:
    return str(t).replace(".", "")


def uid() -> str:
    return uuid.uuid4().hex


def make_root(tmp_path: Any) -> tuple[Any, str]:
    (tmp_path / "ddmq.yaml").write_text("")
    q = tmp_path / "q"
    (q / "work").mkdir(parents=True)
    (q / "ddmq.yaml").write_text("")
    return open_target(str(tmp_path)), str(q)


def random_queue(q: str, rng: random.Random) -> None:
    """Waiting and work/ messages of mixed priorities and queue-number widths, ids in both
    places (the same name, and another priority), leftovers and hostile names."""
    prios = rng.choice([["999"], ["1", "9", "10"], ["0", "5", "999"], ["007", "7"]])
    ids = []
    for _ in range(rng.randrange(0, 400)):
        u = uid() if rng.random() < 0.9 else uid()[: rng.randrange(6, 32)]
        t = NOW - rng.uniform(0, 86400)
        number = qn(round(t, rng.choice([0, 1, 3, 6]))) if rng.random() < 0.9 else str(rng.randrange(0, 10**6))
        touch(os.path.join(q, f"{rng.choice(prios)}.{number}.ddmq{u}"))
        ids.append((u, number))
    for _ in range(rng.randrange(0, 30)):  # held: in flight and expired
        dl = int(NOW + rng.choice([-1, 1]) * rng.randrange(1, 3600))
        touch(os.path.join(q, "work", f"{dl}.{rng.choice(prios)}.{qn(NOW - 5)}.ddmq{uid()}"))
    for u, number in rng.sample(ids, min(len(ids), rng.randrange(0, 4))):  # consumed while listed: in both
        touch(os.path.join(q, "work", f"{int(NOW + 60)}.{rng.choice(prios)}.{number}.ddmq{u}"))
    leftovers = ["notes.txt", ".qconsole-tmp-abc", "ddmq.yaml.intermediate", "x.ddmq.bak", "5.123.ddmq",
                 "5.12x.ddmqabc", "5.1.ddmq" + "a" * 70, "a\nb.1.ddmqc", "\x1b[31mred.ddmq", "9." + "1" * 30 + ".ddmqab",
                 "9.1.ddmqé", "0.1.ddmq-x"]
    for name in rng.sample(leftovers, rng.randrange(0, len(leftovers))):
        touch(os.path.join(q, name))
    for name in rng.sample(["junk", ".qconsole-claim-x", "notanumber.1.2.ddmqab", "1.2.ddmqab"],
                           rng.randrange(0, 3)):
        touch(os.path.join(q, "work", name))
    if rng.random() < 0.3:  # a link and a directory named like messages: never messages
        os.symlink("/etc/passwd", os.path.join(q, f"1.{qn(NOW)}.ddmq{uid()}"))
    if rng.random() < 0.2:
        os.mkdir(os.path.join(q, f"2.{qn(NOW)}.ddmq{uid()}"))
    if rng.random() < 0.2:
        os.symlink("/etc", os.path.join(q, "work", f"{int(NOW)}.1.{qn(NOW)}.ddmq{uid()}"))


@pytest.fixture
def spy(monkeypatch: Any) -> list[bool]:
    """Whether each relisting took the head/tail path (True) or diffed by sets (False)."""
    calls: list[bool] = []
    real = dcols._head_and_tail

    def watched(*args: Any) -> Any:
        out = real(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(dcols, "_head_and_tail", watched)
    return calls


def relist(backend: Any, cols: MessageColumns) -> MessageColumns:
    cols.stamp = None  # as if the directories changed (a stamp can be equal within one tick)
    return backend.list_messages("q", NOW, previous=cols)


@pytest.mark.parametrize("seed", range(40))
def test_random_queues_read_as_the_collected_scan(tmp_path: Any, small_chunks: None, seed: int) -> None:
    backend, q = make_root(tmp_path)
    rng = random.Random(seed)
    random_queue(q, rng)
    partial: list[MessageColumns] = []
    cols = backend.list_messages("q", NOW, progress=partial.append)
    agrees(backend, cols)
    assert not cols.partial and all(p.partial for p in partial)
    if cols.objects is None:  # (the exact path keeps objects: one id in two waiting names)
        assert cols.heads is not None and cols.ready_n == cols.offset
    # and after what clients do, a relisting by difference reads as a fresh one
    mutate(q, rng)
    after = relist(backend, cols)
    agrees(backend, after)
    fresh = backend.list_messages("q", NOW)
    assert seen(after) == seen(fresh) and after.scan.counts == fresh.scan.counts
    # then only what live clients do (the head taken, the tail added): the quick way when it holds
    names = waiting(q)
    for n in names[:3]:
        os.rename(os.path.join(q, n), os.path.join(q, "work", f"{int(NOW + 600)}.{n}"))
    for _ in range(3):
        touch(os.path.join(q, f"999.{qn(time.time())}.ddmq{uid()}"))
    again = relist(backend, after)
    agrees(backend, again)


def waiting(q: str) -> list[str]:
    return sorted(n for n in os.listdir(q) if ddmq_layout._WAITING_RE.fullmatch(n) and os.path.isfile(os.path.join(q, n))
                  and not os.path.islink(os.path.join(q, n)))


def mutate(q: str, rng: random.Random) -> None:
    """What clients (and people) do between two listings, a random few of each."""
    names = waiting(q)
    for n in names[: rng.randrange(0, 5)]:  # consumed from the head, as ddmq does
        os.rename(os.path.join(q, n), os.path.join(q, "work", f"{int(NOW + 600)}.{n}"))
    for _ in range(rng.randrange(0, 6)):  # published
        touch(os.path.join(q, f"999.{qn(time.time())}.ddmq{uid()}"))
    work = [n for n in os.listdir(os.path.join(q, "work")) if ddmq_layout._WORK_RE.fullmatch(n)]
    for n in rng.sample(work, min(len(work), rng.randrange(0, 3))):  # acked, or requeued by clean()
        path = os.path.join(q, "work", n)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        if rng.random() < 0.5:
            os.unlink(path)
        else:
            _dl, _p, number, tail = n.split(".")
            os.rename(path, os.path.join(q, f"0.{number}.{tail}"))
    rest = waiting(q)
    if rest and rng.random() < 0.3:  # deleted from the middle
        os.unlink(os.path.join(q, rng.choice(rest)))
    if rng.random() < 0.2:
        touch(os.path.join(q, "another\x1b]52;c;x\x07.ddmq"))


def test_an_id_in_two_waiting_names_reads_as_the_collected_scan(tmp_path: Any, small_chunks: None) -> None:
    backend, q = make_root(tmp_path)
    u = uid()
    for i in range(50):
        touch(os.path.join(q, f"5.{qn(NOW - 100 + i)}.ddmq{uid()}"))
    touch(os.path.join(q, f"5.{qn(NOW - 1000)}.ddmq{u}"))
    touch(os.path.join(q, f"1.{qn(NOW - 1000)}.ddmq{u}"))  # a copy at another priority
    cols = backend.list_messages("q", NOW)
    agrees(backend, cols)
    assert cols.scan.counts["ready"] == 51


@pytest.fixture
def big(tmp_path: Any) -> tuple[Any, str]:
    backend, q = make_root(tmp_path)
    for i in range(300):
        touch(os.path.join(q, f"999.{qn(NOW - 3600 + i)}.ddmq{uid()}"))
    for i in range(6):
        touch(os.path.join(q, "work", f"{int(NOW + (60 if i < 3 else -60))}.999.{qn(NOW - 7200 + i)}.ddmq{uid()}"))
    touch(os.path.join(q, ".qconsole-tmp-1"))
    touch(os.path.join(q, "README"))
    return backend, q


def test_consumers_take_the_head_and_producers_add_to_the_tail(big: Any, small_chunks: None, spy: list[bool]) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    assert cols.objects is None and cols.ready_n == 300
    head = waiting(q)[:4]
    for n in head:  # consumed as ddmq does: renamed into work/ with its deadline in front
        os.rename(os.path.join(q, n), os.path.join(q, "work", f"{int(NOW + 30)}.{n}"))
    os.unlink(os.path.join(q, "work", f"{int(NOW + 30)}.{head[0]}"))  # and one acknowledged
    for i in range(3):
        touch(os.path.join(q, f"999.{qn(NOW + 1 + i)}.ddmq{uid()}"))
    after = relist(backend, cols)
    assert spy == [True]
    agrees(backend, after)
    assert after.relpath(0) == waiting(q)[0]
    # the names kept are the very string objects of the last listing (no copy of a million names)
    assert after.heads[0] is cols.heads[4]


def test_a_name_the_last_listing_missed_while_it_ran_is_taken_the_quick_way(big: Any, small_chunks: None,
                                                                           spy: list[bool]) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    touch(os.path.join(q, f"999.{qn(NOW + 2)}.ddmq{uid()}"))
    after = relist(backend, cols)
    # published before that one, while the listing ran, and not returned by it (readdir may
    # or may not return what changes during it): it sorts below the last name listed
    touch(os.path.join(q, f"999.{qn(NOW + 1)}.ddmq{uid()}"))
    again = relist(backend, after)
    assert spy == [True, True]
    agrees(backend, again)
    assert again.scan.counts["ready"] == 302


def test_a_requeue_at_priority_0_or_a_delete_in_the_middle_is_found_by_difference(
        big: Any, small_chunks: None, spy: list[bool]) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    held = sorted(os.listdir(os.path.join(q, "work")))
    _dl, _p, number, tail = held[-1].split(".")
    os.rename(os.path.join(q, "work", held[-1]), os.path.join(q, f"0.{number}.{tail}"))  # clean()'s requeue
    os.unlink(os.path.join(q, waiting(q)[100]))
    after = relist(backend, cols)
    assert spy == [False]
    agrees(backend, after)
    assert after.relpath(0) == f"0.{number}.{tail}"
    again = relist(backend, after)  # nothing changed but the stamp: the quick way again
    assert spy == [False, True]
    agrees(backend, again)


def test_a_message_seen_in_both_places_while_relisting_counts_once_as_held(
        big: Any, small_chunks: None, monkeypatch: Any) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    first = waiting(q)[0]
    real = dcols._Work

    def consumed_meanwhile(qdir: str, name: str) -> Any:  # the consumer renames it after the queue was listed
        if os.path.exists(os.path.join(q, first)):
            os.rename(os.path.join(q, first), os.path.join(q, "work", f"{int(NOW + 60)}.{first}"))
            touch(os.path.join(q, first))  # a copy left behind, as if listed before the rename
        return real(qdir, name)

    monkeypatch.setattr(dcols, "_Work", consumed_meanwhile)
    after = relist(backend, cols)
    assert first not in after.heads[: after.ready_n]
    assert after.index_of(dcols.uid_of(first)) is not None and after.scan.counts["inflight"] == 4


def test_new_links_and_files_that_are_not_messages_are_seen_on_a_relisting(big: Any, small_chunks: None) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    os.symlink("/etc/passwd", os.path.join(q, f"999.{qn(NOW + 5)}.ddmq{uid()}"))
    touch(os.path.join(q, "notes.ddmq.txt"))
    after = relist(backend, cols)
    agrees(backend, after)
    assert after.scan.counts["foreign"] == 3
    assert any("not a regular file" in e for e in after.scan.errors)


@pytest.fixture
def settled(monkeypatch: Any) -> None:
    """A directory counts as settled as soon as its times are in the past (not 2 s after)."""
    monkeypatch.setattr(fs_root, "STAMP_SETTLE_S", 0.0)
    time.sleep(0.05)


def test_unchanged_directories_are_not_listed_again_and_work_counts(big: Any, settled: None) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    assert backend.list_messages("q", NOW, previous=cols) is cols
    # a change in work/ alone (an ack) is a change of the queue's listing
    os.unlink(os.path.join(q, "work", sorted(os.listdir(os.path.join(q, "work")))[0]))
    changed = backend.list_messages("q", NOW, previous=cols)
    assert changed is not cols and len(changed) == len(cols) - 1
    time.sleep(0.05)
    assert backend.list_messages("q", NOW, previous=changed) is changed
    touch(os.path.join(q, f"999.{qn(NOW)}.ddmq{uid()}"))
    assert len(backend.list_messages("q", NOW, previous=changed)) == len(cols)


def test_a_stamp_is_trusted_for_a_while_only(big: Any, settled: None, monkeypatch: Any) -> None:
    backend, _q = big
    cols = backend.list_messages("q", NOW)
    assert backend.list_messages("q", NOW, previous=cols) is cols
    monkeypatch.setattr(fs_root, "FULL_RELIST_S", 0.0)  # NFS caches attributes: list again anyway
    assert backend.list_messages("q", NOW, previous=cols) is not cols


def test_an_unreadable_work_dir_is_one_error_line(big: Any) -> None:
    backend, q = big
    os.rename(os.path.join(q, "work"), os.path.join(q, "work.gone"))
    os.mkdir(os.path.join(q, "work"))
    os.chmod(os.path.join(q, "work"), 0)
    try:
        if os.access(os.path.join(q, "work"), os.R_OK):
            pytest.skip("running as root: permissions are not enforced")
        cols = backend.list_messages("q", NOW)
        assert cols.scan.counts["ready"] == 300
        assert any(e.startswith("cannot read q/work") for e in cols.scan.errors)
    finally:
        os.chmod(os.path.join(q, "work"), 0o755)


def test_an_action_drops_its_messages_and_the_next_listing_starts_from_what_is_left(big: Any, small_chunks: None) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    gone = {cols[0].id, cols[150].id, cols[-1].id}  # two ready, one expired
    for i in (0, 150, len(cols) - 1):
        os.unlink(os.path.join(q, cols[i].relpath))
    left = cols.without(gone)
    assert seen(left) == [r for r in seen(cols) if r[0] not in gone]
    assert left.ready_n == cols.ready_n - 2 and left.index_of(cols[151].id) == 149
    agrees(backend, relist(backend, left))


def test_name_tails_are_the_ids() -> None:
    heads = [f"{p}.1764000000{i}.ddmq{u}" for i, (p, u) in enumerate([("1", "aa"), ("1", "b"), ("2", "ddmqx")])]
    ids = NameTails(heads, ["work/5.1.2.ddmqzz"], ".ddmq")
    assert list(ids) == ["aa", "b", "ddmqx", "zz"] and len(ids) == 4
    assert ids[2] == "ddmqx" and ids[-1] == "zz" and ids[1:3] == ["b", "ddmqx"]
    assert ids.index("zz") == 3 and ids.index("b") == 1 and ids.index("ddmqx") == 2
    assert "a" not in ids and "x" not in ids and "b" in ids
    with pytest.raises(ValueError):
        ids.index("b", 2)
    with pytest.raises(ValueError):
        ids.index("aa\n1.17640000001.ddmqb")  # not an id: never matched across two names
    assert ids.present({"aa", "zz", "a", "x", "ddmqx", "b\n", "nope"}) == {"aa", "zz", "ddmqx"}


def test_a_row_is_found_by_its_name_and_marks_that_still_hold_are_kept(big: Any, small_chunks: None) -> None:
    backend, q = big
    cols = backend.list_messages("q", NOW)
    msgs = [cols[i] for i in (0, 5, 299, 300, 305)]  # ready ones and held ones
    for m in msgs:
        assert cols.index_of(m.id, name=m.relpath) == cols.index_of(m.id) == next(
            i for i in range(len(cols)) if cols[i].id == m.id)
    first = msgs[0]
    os.rename(os.path.join(q, first.relpath), os.path.join(q, "work", f"{int(NOW + 60)}.{first.relpath}"))
    os.unlink(os.path.join(q, msgs[1].relpath))
    after = relist(backend, cols)
    agrees(backend, after)
    # consumed meanwhile: found among the held rows, from the name it had
    assert after.index_of(first.id, near=0, name=first.relpath) == after.ready_n + 3
    assert after.index_of(msgs[1].id, name=msgs[1].relpath) is None
    assert after.present({m.id for m in msgs} | {"gone"}) == {m.id for m in msgs} - {msgs[1].id}


# -- the real client ------------------------------------------------------------------------

def test_the_real_clients_queue_reads_as_the_collected_scan_and_in_its_order(tmp_path: Any, small_chunks: None,
                                                                             spy: list[bool]) -> None:
    b = ddmq_broker(str(tmp_path), "q")
    for i in range(120):
        b.publish("q", f"m{i}", priority=[999, 5, 10][i % 3])
    taken = b.consume("q", n=7)
    b.ack("q", [m.filename for m in taken[:3]])
    backend = open_target(str(tmp_path))
    now = time.time()
    cols = backend.list_messages("q", now)
    agrees(backend, cols, now=now)
    assert cols.scan.counts["ready"] == 113 and cols.scan.counts["inflight"] == 4
    assert cols.scan.warnings  # 10 before 5 and 999: mixed widths
    # the first ready row is the message ddmq's consumer takes next
    nxt = b.consume("q", n=1)
    assert cols[0].id == nxt.id and nxt.filename.split(".", 1)[1] == cols[0].relpath  # (consumed: <deadline>.name)
    for i in range(5):
        b.publish("q", f"late{i}")  # the queue's default priority (999): after the last name
    cols.stamp = None
    after = backend.list_messages("q", now, previous=cols)
    assert spy == [True]
    agrees(backend, after, now=now)
    assert after.scan.counts["ready"] == 117 and after.scan.counts["inflight"] == 5


def test_relistings_beside_the_real_client_producing_and_consuming(tmp_path: Any, small_chunks: None,
                                                                   spy: list[bool]) -> None:
    """ddmq 0.9.14's own publish/consume/ack in threads while the console relists by difference:
    no listing shows an id twice, and once the clients stop a relisting reads as a fresh one."""
    import threading

    b = ddmq_broker(str(tmp_path), "q")
    for i in range(300):
        b.publish("q", f"m{i}", priority=[999, 999, 999, 5][i % 4])
    backend = open_target(str(tmp_path))
    stop = threading.Event()
    errors: list[BaseException] = []

    def producer() -> None:
        from peers import ddmq_module

        p = ddmq_module().broker(str(tmp_path))
        while not stop.is_set():
            p.publish("q", "live", clean=False)
            time.sleep(0.002)

    def consumer() -> None:
        from peers import ddmq_module

        c = ddmq_module().broker(str(tmp_path))
        while not stop.is_set():
            try:
                msg = c.consume("q", clean=False)
                if msg is not None:
                    c.ack("q", msg.filename, clean=False)
            except (OSError, ValueError):
                pass  # ddmq's own races: the other consumer renamed it first, or it read a file
                # the producer had not finished writing (ddmq writes in place: invalid JSON)
            except BaseException as err:  # noqa: BLE001 (reported below)
                errors.append(err)
                return

    threads = [threading.Thread(target=f) for f in (producer, consumer, consumer)]
    for t in threads:
        t.start()
    try:
        cols = backend.list_messages("q", time.time())
        for _ in range(25):
            cols.stamp = None
            cols = backend.list_messages("q", time.time(), previous=cols)
            ids = list(cols.ids)
            assert len(set(ids)) == len(ids)
            assert cols.scan.counts["ready"] == cols.ready_n
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors and True in spy
    now = time.time()
    cols.stamp = None
    after = backend.list_messages("q", now, previous=cols)
    agrees(backend, after, now=now)
    assert seen(after) == seen(backend.list_messages("q", now))
