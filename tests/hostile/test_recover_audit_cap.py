"""recover names every leftover it leaves alone; with 8,000 planted claims sharing one token its
audit line was 1.3 MB, which ``qconsole audit`` refuses to read (review D). The audit line's
lists are capped as a change's ids are, with the full count beside them; stdout still lists all."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from qconsole.backends.fs.claims import HOST

QCONSOLE = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "qconsole")


def test_a_recover_of_8000_planted_claims_leaves_a_readable_audit_line(tmp_path):
    root = tmp_path / "r"
    for q in ("a", "b"):
        (root / q).mkdir(parents=True)
    (root / "b" / "1700000000000000").write_text("x")
    for i in range(8000):
        (root / "a" / f".qconsole-claim-{HOST}-999999-deadbeef-{1795724116200000 + i}").write_text("m")
    res = subprocess.run([QCONSOLE, "recover", "-r", str(root)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 1 and res.stdout.count("\n") > 8000, res.stdout[-300:]
    line = (root / ".qconsole" / "audit.log").read_text().splitlines()[-1]
    assert len(line) < 1 << 20
    rec = json.loads(line)
    assert rec["action"] == "recover" and len(rec["problems"]) == 1000 and rec["problems_count"] >= 8000
    shown = subprocess.run([QCONSOLE, "audit", "-r", str(root), "--tail", "1", "--json"], capture_output=True,
                           text=True, timeout=60)
    assert json.loads(shown.stdout)["action"] == "recover", shown.stdout[:300]
