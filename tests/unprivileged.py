"""Test helper: run the installed ``qconsole`` as an operator whose permission bits count.

As root, the kernel ignores permission bits (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so a
test of "permission denied" would pass nothing through; ``setpriv`` runs the command still as
uid 0 but without those capabilities, so the kernel checks mode bits as for anyone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

QCONSOLE = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "qconsole")
NO_DAC = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search",
          "--"] if os.geteuid() == 0 else []
#: why such a test cannot run here (None: it can)
MISSING = "setpriv (util-linux) is missing" if NO_DAC and not shutil.which("setpriv") else None


def run_qconsole(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``qconsole ARGV`` without root's permission overrides; output as text."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    return subprocess.run([*NO_DAC, QCONSOLE, *argv], capture_output=True, text=True, timeout=timeout, env=env)
