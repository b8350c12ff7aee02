"""The one-line summary of a change stays one short line however many skips it has: skip
reasons carry ids or file names, so 2,000 skips made one stdout line (and the console's status
line) of 192 KB (review). The lines after it name each skip (the CLI caps those at 50)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from qconsole.ops.result import CHANGED, NOT_IN_QUEUE, OpResult

QCONSOLE = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "qconsole")


def test_a_few_reasons_are_all_named_most_frequent_first():
    r = OpResult("requeue", "jobs", done=["a"], skipped=[("b", NOT_IN_QUEUE), ("c", CHANGED), ("d", CHANGED)])
    assert r.summary() == f"requeue jobs: 1 done, 3 skipped (2 {CHANGED}, 1 {NOT_IN_QUEUE})"


def test_two_thousand_distinct_reasons_make_a_short_line_naming_the_most_frequent():
    skipped = [(str(i), f"id {i} is in the queue already ({i}.new)") for i in range(2000)]
    skipped += [(f"x{i}", NOT_IN_QUEUE) for i in range(5)] + [("long", "y" * 5000)]
    line = OpResult("trash restore", "jobs", skipped=skipped).summary()
    assert "\n" not in line and len(line) < 700, len(line)
    assert line.startswith("trash restore jobs: 0 done, 2006 skipped (5 not in the queue any more, ")
    assert line.endswith(", 1999 other reason(s))")


def test_requeue_of_2000_planted_twins_prints_a_short_summary(tmp_path):
    qdir = tmp_path / "q"
    qdir.mkdir()
    now = int(time.time() * 1e6)
    for i in range(2000):  # expired in-flight, each with a <id>.new twin: every one skipped
        (qdir / f"{1795724116216000 + i}.{now - 10**8}").write_text("x")
        (qdir / f"{1795724116216000 + i}.new").write_text("y")
    res = subprocess.run([QCONSOLE, "requeue", "q", "--expired", "-r", str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    first = res.stdout.splitlines()[0]
    assert first.startswith("requeue q: 0 done, 2000 skipped (") and len(first) < 700, first[:800]
