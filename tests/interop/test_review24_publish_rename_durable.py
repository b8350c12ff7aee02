"""Review 24: publish made each batch's copies durable, then renamed them into place and never
synced the directory. Cut off right after a publish returned (a copy of an ext4's disk image,
taken as the publish returns), the disk held the batch under its temp names (ddmq's
``.qconsole-tmp-*``, VSQS's ``<id>.new`` and temp link) -- what ``recover`` removes as a dead
publisher's -- so messages reported published were lost (at b020a64 and e83660e alike). The
queue directory is now fsynced once a batch is renamed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from qconsole.backends import open_target
from qconsole.ops import Operations


@pytest.fixture
def ext4_image(tmp_path):
    """An ext4 (no journal: nothing but an fsync orders its writes) on a loop device whose
    backing file is on a tmpfs: a copy of the file is the disk at a power cut. Root only."""
    tools = ("losetup", "mkfs.ext4", "debugfs")
    if sys.platform != "linux" or os.geteuid() != 0 or not all(shutil.which(t) for t in tools):
        pytest.skip("needs root, losetup, mkfs.ext4 and debugfs")
    small, mnt = tmp_path / "small", tmp_path / "mnt"
    small.mkdir()
    mnt.mkdir()
    undo: list[list[str]] = []

    def run(*cmd: str) -> str:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"{' '.join(cmd)}: {r.stderr.strip()}")
        return r.stdout.strip()

    try:
        run("mount", "-t", "tmpfs", "-o", "size=80m", "tmpfs", str(small))
        undo.append(["umount", "-l", str(small)])
        img = small / "disk.img"
        run("truncate", "-s", "64M", str(img))
        run("mkfs.ext4", "-q", "-O", "^has_journal", str(img))
        dev = run("losetup", "-f", "--show", str(img))
        undo.append(["losetup", "-d", dev])
        run("mount", dev, str(mnt))
        undo.append(["umount", "-l", str(mnt)])
        yield img, mnt
    finally:
        for cmd in reversed(undo):
            subprocess.run(cmd, capture_output=True)


def _names_at_power_cut(img, snap, rel: str) -> list[str]:
    subprocess.run(["cp", "--sparse=always", str(img), str(snap)], check=True)
    out = subprocess.run(["debugfs", "-R", f"ls -p /{rel}", str(snap)], capture_output=True, text=True, check=True).stdout
    # -p: /inode/mode/uid/gid/name/size/
    return [f.split("/")[5] for f in out.splitlines() if f.count("/") >= 6 and f.split("/")[5] not in (".", "..")]


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_published_batch_is_under_its_final_names_on_the_disk(ext4_image, tmp_path, layout):
    img, mnt = ext4_image
    root = mnt / "r"
    (root / "q").mkdir(parents=True)
    if layout == "ddmq":
        (root / "q" / "work").mkdir()
        (root / "q" / "ddmq.yaml").write_text("")
    subprocess.run(["sync", "-f", str(mnt)], check=True)
    res = Operations(open_target(str(root)), audit_log=str(tmp_path / "audit.log")).publish("q", [b'"a"', b'"b"', b'"c"'])
    names = _names_at_power_cut(img, tmp_path / "snap.img", "r/q")  # the power cut: right as publish returns
    assert len(res.done) == 3
    on_disk = [n for n in names if n not in ("work", "ddmq.yaml")]
    left = [n for n in on_disk if n.startswith(".") or n.endswith(".new")]
    assert not left, f"published, but on the disk still as {sorted(left)}"
    if layout == "vsqs":
        assert sorted(on_disk) == sorted(res.done)
    else:
        assert sorted(n.rpartition("ddmq")[2] for n in on_disk) == sorted(res.done)
