"""`publish --count N` stopped by ctrl+c (SIGINT) still writes an audit line for what it did
publish (issue 9, class 8)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from harness import qconsole_bin


def test_interrupted_publish_is_audited(tmp_path):
    root = tmp_path / "root"
    (root / "jobs").mkdir(parents=True)
    log = tmp_path / "audit.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    p = subprocess.Popen([qconsole_bin(), "publish", "jobs", "x", "--count", "2000000", "-r", str(root),
                          "--audit-log", str(log)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    # (published ones: a batch's <id>.new files are not messages yet)
    while time.monotonic() < deadline and sum(n.isdigit() for n in os.listdir(root / "jobs")) < 50:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, (p.returncode, err)
    assert b"Traceback" not in err
    published = [n for n in os.listdir(root / "jobs") if n.isdigit()]
    assert published
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines and lines[-1]["action"] == "publish" and lines[-1]["outcome"] == "interrupted", lines[-1:]
    # every message it left is accounted for (the one being renamed when stopped may be missing),
    # and what it wrote but had not published is taken back
    assert len(set(published) - set(lines[-1]["ids"])) <= 1 and lines[-1]["count"] >= len(published) - 1
    assert not [n for n in os.listdir(root / "jobs") if not n.isdigit()]


SIGINT_AT_THIRD_COMMIT = '''
import os
_rename, _seen = os.rename, [0]
def rename(src, dst, **kw):
    if isinstance(src, (str, bytes)) and os.fsdecode(src).endswith(".new"):
        _seen[0] += 1
        if _seen[0] == 3:  # ctrl+c as the third message's commit rename is called
            raise KeyboardInterrupt
    return _rename(src, dst, **kw)
os.rename = rename
'''


def test_a_publish_stopped_before_its_commit_rename_leaves_no_new_file(tmp_path):
    """ctrl+c after a message's <id>.new was written and synced but before its rename to <id>
    left that .new for good: no client takes it and recover leaves .new files alone (a live
    producer's), so it stayed `writing` in every count (review, hostile F)."""
    root = tmp_path / "root"
    (root / "jobs").mkdir(parents=True)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SIGINT_AT_THIRD_COMMIT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    env.update(PYTHONPATH=str(hook), XDG_STATE_HOME=str(tmp_path / "state"))
    res = subprocess.run([qconsole_bin(), "publish", "jobs", "x", "--count", "5", "-r", str(root)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 130 and "publish jobs: 2 done" in res.stderr, (res.returncode, res.stderr)
    assert sorted(len(n) for n in os.listdir(root / "jobs")) == [16, 16], os.listdir(root / "jobs")
