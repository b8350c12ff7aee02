"""VSQS requeue in bulk: one listing for the batch (not one per message: 20k expired
messages took minutes), never over another file of the same id, even one that appeared
after that listing."""

from __future__ import annotations

import os

import pytest

from qconsole.backends import open_target
from qconsole.backends.fs import safety
from qconsole.backends.vsqs import writes
from qconsole.ops.operations import Operations

BASE = 1_700_000_000_000_000
PAST = 1_600_000_000_000_000


def test_bulk_requeue_lists_the_queue_once_and_skips_ids_live_elsewhere(tmp_path, monkeypatch):
    q = tmp_path / "q"
    q.mkdir()
    for i in range(200):
        (q / f"{BASE + i}.{PAST + i}").write_text(f"m{i}")
    (q / f"{BASE + 1}").write_text("already ready under the same id")
    (q / f"{BASE + 2}.{PAST + 999}").write_text("the same id held twice")
    calls = []
    for how in ("listdir", "listing"):  # either form of a listing through the root
        real = getattr(safety.Confined, how)
        monkeypatch.setattr(safety.Confined, how, lambda self, p, real=real: calls.append(p) or real(self, p))
    monkeypatch.setattr("qconsole.backends.vsqs.layout.listing", None)  # and no scan's listing
    res = Operations(open_target(str(tmp_path)), audit_log=str(tmp_path / "audit")).requeue("q", expired_only=True)
    assert len(calls) == 1
    names = set(os.listdir(q))
    assert (q / f"{BASE + 1}").read_text() == "already ready under the same id"  # never overwritten
    assert f"{BASE + 1}.{PAST + 1}" in names
    assert {f"{BASE + 2}.{PAST + 2}", f"{BASE + 2}.{PAST + 999}"} <= names
    assert all(str(BASE + i) in names for i in range(3, 200))
    skipped = [why for _mid, why in res.skipped]
    assert len(skipped) == 2 and all("also live as" in why for why in skipped)  # (a scan lists an id once)


def test_a_ready_name_that_appears_after_the_listing_is_not_overwritten(tmp_path):
    q = tmp_path / "q"
    q.mkdir()
    held = f"{BASE}.{PAST}"
    (q / held).write_text("held")
    with safety.Confined(str(tmp_path)) as c:
        live = writes.live_names(c, str(q), {str(BASE)})
        (q / str(BASE)).write_text("a consumer's own requeue, or a planted file")
        why = writes.requeue(c, str(q), str(BASE), held, live)
    assert why and "also live as" in why
    assert (q / str(BASE)).read_text() == "a consumer's own requeue, or a planted file"
    assert (q / held).read_text() == "held"


@pytest.mark.parametrize("renameat2", [True, False])
def test_the_one_call_no_replace_rename_never_overwrites_a_late_ready_name(tmp_path, monkeypatch, renameat2):
    """The bulk path (the queue directory opened once, renameat2(RENAME_NOREPLACE), or a check
    then a rename where the file system has none) leaves a ready name that appeared after the
    listing alone, and requeues the rest."""
    if not renameat2:
        monkeypatch.setattr(safety, "_RENAMEAT2", False)
    q = tmp_path / "q"
    q.mkdir()
    held = f"{BASE}.{PAST}"
    (q / held).write_text("held")
    (q / f"{BASE + 1}.{PAST}").write_text("other")
    with safety.Confined(str(tmp_path)) as c:
        live = writes.live_names(c, str(q), {str(BASE), str(BASE + 1)})
        (q / str(BASE)).write_text("a consumer's own requeue, or a planted file")
        pair = c.pair(str(q), str(q))
        why = writes.requeue(c, str(q), str(BASE), held, live, pair)
        ok = writes.requeue(c, str(q), str(BASE + 1), f"{BASE + 1}.{PAST}", live, pair)
    assert why and "also live as" in why and ok is None
    assert (q / str(BASE)).read_text() == "a consumer's own requeue, or a planted file"
    assert (q / held).read_text() == "held" and (q / str(BASE + 1)).read_text() == "other"
