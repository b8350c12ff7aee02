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
    while time.monotonic() < deadline and len(os.listdir(root / "jobs")) < 50:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130, (p.returncode, err)
    assert b"Traceback" not in err
    published = [n for n in os.listdir(root / "jobs") if n.isdigit()]
    assert published
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines and lines[-1]["action"] == "publish" and lines[-1]["outcome"] == "interrupted", lines[-1:]
    # every message it left is accounted for (the one being written when stopped may be missing)
    assert set(published) <= set(lines[-1]["ids"]) or lines[-1]["count"] >= len(published) - 1, lines[-1]["count"]
