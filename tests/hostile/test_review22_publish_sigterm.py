"""`publish -n N` told to stop with SIGTERM (kill, timeout, a service manager's stop) in the
middle of a batch: the batch's unpublished copies are taken back and the audit line says what
was published, as after ctrl+c (review of publish batches). Killed by SIGTERM's default action
it left up to a batch (256) of VSQS ``<id>.new`` files that nothing ever removes (recover cannot
tell them from a live vsqs publisher's) and no audit line for thousands of published messages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from harness import qconsole_bin


@pytest.mark.parametrize("layout", ["vsqs", "ddmq"])
def test_a_publish_stopped_by_sigterm_takes_back_its_batch_and_is_audited(tmp_path, layout):
    root = tmp_path / "root"
    (root / "jobs").mkdir(parents=True)
    if layout == "ddmq":
        (root / "jobs" / "work").mkdir()
        (root / "jobs" / "ddmq.yaml").write_text("")
    log = tmp_path / "audit.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    p = subprocess.Popen([qconsole_bin(), "publish", "jobs", '"x"', "--count", "200000", "-r", str(root),
                          "--layout", layout, "--audit-log", str(log)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def published() -> list[str]:
        names = os.listdir(root / "jobs")
        return [n for n in names if n.isdigit()] if layout == "vsqs" else [n for n in names if ".ddmq" in n]

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(published()) < 300:
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode != 0
    assert b"Traceback" not in err, err
    names = [n for n in os.listdir(root / "jobs") if n not in ("work", "ddmq.yaml")]
    left = [n for n in names if n not in published()]
    assert left == [], left[:5]  # no <id>.new, no temp file
    assert log.exists(), "no audit line"
    rec = json.loads(log.read_text().splitlines()[-1])
    assert rec["action"] == "publish" and rec["outcome"] == "interrupted", rec
    assert rec["count"] == len(published()), (rec["count"], len(published()))
