"""The `open`/`demo` commands, import hygiene, the demo simulation and the rate estimates."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from typer.testing import CliRunner

from qconsole.cli import app
from qconsole.demo import Simulation, build_fixture, make_ddmq_root, make_vsqs_root
from qconsole.model import QueueScan
from qconsole.backends import open_target as Root

from qconsole.screens.rates import QueueHistory, sparkline


def test_no_root_explains_in_one_line_and_points_to_demo() -> None:
    result = CliRunner().invoke(app, ["open"])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "qconsole demo" in lines[0] and "QCONSOLE_ROOT" in lines[0]
    assert "Traceback" not in result.output


def test_bare_qconsole_means_open(tmp_path: Any) -> None:
    proc = subprocess.run([sys.executable, "-c", "from qconsole.cli import main; main()", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "QCONSOLE_ROOT": ""})
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and proc.stderr.count("\n") == 1


def test_cli_import_does_not_import_textual() -> None:
    code = "import sys, qconsole, qconsole.cli, qconsole.demo; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_fixture_roots_scan_as_promised(tmp_path: Any) -> None:
    droot, vroot = build_fixture(str(tmp_path), now=1714564800.0)
    d = Root(droot).scan_queue("emails", 1714564800.0)
    assert (d.counts["ready"], d.counts["inflight"], d.counts["expired"]) == (8, 2, 1)
    v = Root(vroot).scan_queue("orders", 1714564800.0)
    assert (v.counts["ready"], v.counts["inflight"], v.counts["expired"]) == (12, 2, 1)


def test_a_queue_without_consumers_stops_growing_at_the_demos_cap(tmp_path: Any, monkeypatch: Any) -> None:
    """VSQS webhooks has no consumer (a backlog to watch, by design): it grew for as long as the
    demo ran (2/s: thousands of files after an hour, every listing slower). Its producer pauses
    at the cap."""
    import qconsole.demo as demo

    monkeypatch.setattr(demo, "BACKLOG_CAP", 4)
    monkeypatch.setattr(demo, "BACKLOG_EVERY", 1)
    vroot = make_vsqs_root(str(tmp_path / "vsqs"))
    sim = Simulation(vroot).start()
    try:
        time.sleep(7)  # ~14 messages at 2/s without the cap
        hooks = Root(vroot).scan_queue("webhooks").total
    finally:
        sim.stop()
    assert sim.errors == []
    assert hooks == 4, hooks


def test_simulation_moves_messages_through_the_real_protocols(tmp_path: Any) -> None:
    droot = make_ddmq_root(str(tmp_path / "ddmq"))
    vroot = make_vsqs_root(str(tmp_path / "vsqs"))
    sim = Simulation(droot, vroot).start()
    try:
        deadline = time.time() + 8
        seen_held = seen_ready = False
        while time.time() < deadline and not (seen_held and seen_ready):
            time.sleep(0.3)
            scans = Root(droot).scan().queues + Root(vroot).scan().queues
            seen_ready = seen_ready or any(q.counts["ready"] for q in scans)
            seen_held = seen_held or any(q.counts["inflight"] for q in scans)
    finally:
        sim.stop()
    assert sim.errors == []
    assert seen_ready and seen_held
    # every file the simulation left is a message the scanners understand
    for root in (Root(droot), Root(vroot)):
        assert all(q.counts["foreign"] == 0 for q in root.scan().queues)


def test_rates_from_ids_and_sparkline() -> None:
    h = QueueHistory()
    s1 = QueueScan("q", "vsqs", 0.0)
    s1.counts["ready"] = 3
    h.add(s1, 100.0, frozenset({"a", "b", "c"}))
    s2 = QueueScan("q", "vsqs", 0.0)
    s2.counts["ready"] = 4
    h.add(s2, 102.0, frozenset({"b", "c", "d", "e"}))
    assert h.rate_in == 1.0 and h.rate_out == 0.5
    assert sparkline([0, 4, 8]) == "▁▅█"
    assert sparkline([]) == ""
