"""A move's commit renames are on the disk before the claims they free are dropped. The claims
live in the source queue, whose directory the next batch's journal fsyncs; the copies' renames
in the destination's were never fsynced. Cut off after a move returned (a copy of a journal-less
ext4's disk image), the source no longer held the claims while the destination still held
the copies under their temp names, which `recover` removes as a dead process's: moved
messages gone from both queues."""

from __future__ import annotations

import json

import pytest

from qconsole.backends import open_target
from qconsole.ops import Operations
from test_review24_publish_rename_durable import _names_at_power_cut, ext4_image  # noqa: F401 (a fixture)

N = 600  # batches of 256: the second and third batches' journals fsync the source


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_moved_batch_is_under_its_final_names_before_its_claims_go(ext4_image, tmp_path, layout):  # noqa: F811
    import subprocess

    img, mnt = ext4_image
    root = mnt / "r"
    for q in ("q", "d"):
        (root / q).mkdir(parents=True)
        if layout == "ddmq":
            (root / q / "work").mkdir()
            (root / q / "ddmq.yaml").write_text("")
    if layout == "ddmq":
        (root / "ddmq.yaml").write_text("")
    for i in range(N):
        if layout == "vsqs":
            (root / "q" / str(1_700_000_000_000_000 + i)).write_bytes(b"m")
        else:
            uid, qn = f"{i:032x}", f"1700000000{i:06d}"
            body = {"message": f"m-{i}", "queue": "q", "timeout": None, "id": uid, "priority": 999,
                    "queue_number": qn, "filename": f"999.{qn}.ddmq{uid}", "requeue": True,
                    "requeue_counter": 0, "requeue_limit": None}
            (root / "q" / f"999.{qn}.ddmq{uid}").write_text(json.dumps(body))
    subprocess.run(["sync", "-f", str(mnt)], check=True)
    res = Operations(open_target(str(root)), audit_log=str(tmp_path / "audit.log")).move("q", "d", all_=True)
    assert len(res.done) == N
    names = _names_at_power_cut(img, tmp_path / "snap.img", "r/d")  # the power cut: right as move returns
    on_disk = [n for n in names if n and n not in ("work", "ddmq.yaml")]  # ('': a slot debugfs lists empty)
    final = [n for n in on_disk if not n.startswith(".") and not n.endswith(".new")]
    # (a VSQS copy's temp link, dropped after its claim, may still be there: a second name of
    # a live message, which recover drops)
    assert len(final) == N, f"{N - len(final)} moved, but not on the disk under their names: " \
                            f"e.g. {sorted(set(on_disk) - set(final))[:3]}"
