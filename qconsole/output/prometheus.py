"""Prometheus text exposition format, for node_exporter's textfile collector."""

from __future__ import annotations

from ..model import RootScan
from ..safetext import escape_controls
from ..states import STATES


def _label(value: str) -> str:
    # controls and undecodable bytes (surrogates, which UTF-8 output cannot encode) made
    # visible first; then the exposition format's own escapes for backslash, quote, newline
    value = escape_controls(value)
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(scan: RootScan) -> str:
    now = scan.generated_at
    root = _label(scan.root)
    lines = [
        "# HELP qconsole_messages Messages in a queue by state (foreign: files that are no message).",
        "# TYPE qconsole_messages gauge",
    ]
    for q in scan.queues:
        base = f'root="{root}",queue="{_label(q.name)}",layout="{q.layout}"'
        for s in STATES:
            lines.append(f'qconsole_messages{{{base},state="{s}"}} {q.counts[s]}')
    lines += [
        "# HELP qconsole_oldest_ready_age_seconds Age of the oldest ready message (0 when none).",
        "# TYPE qconsole_oldest_ready_age_seconds gauge",
    ]
    for q in scan.queues:
        age = q.oldest_ready_age(now) or 0.0
        lines.append(f'qconsole_oldest_ready_age_seconds{{root="{root}",queue="{_label(q.name)}"}} {age:.3f}')
    lines += [
        "# HELP qconsole_next_expiry_seconds Seconds to the nearest in-flight deadline (absent when none).",
        "# TYPE qconsole_next_expiry_seconds gauge",
    ]
    for q in scan.queues:
        nxt = q.next_expiry_in(now)
        if nxt is not None:
            lines.append(f'qconsole_next_expiry_seconds{{root="{root}",queue="{_label(q.name)}"}} {nxt:.3f}')
    rsmq = [q for q in scan.queues if q.extras]
    # RSMQ's own figures: counters of the queue's hash, its settings, and redeliveries
    for metric, key, kind, text in (
        ("qconsole_rsmq_sent_total", "totalsent", "counter", "Messages ever sent to the queue (rsmq's totalsent)."),
        ("qconsole_rsmq_received_total", "totalrecv", "counter", "Receives ever made (rsmq's totalrecv)."),
        ("qconsole_rsmq_received_more_than_once", "received_more_than_once", "gauge",
         "Messages in the queue received more than once (absent when counted by HLEN)."),
        ("qconsole_rsmq_vt_seconds", "vt", "gauge", "The queue's visibility timeout."),
        ("qconsole_rsmq_delay_seconds", "delay", "gauge", "The queue's delay for new messages."),
        ("qconsole_rsmq_maxsize_bytes", "maxsize", "gauge", "The queue's largest message (-1: no limit)."),
        ("qconsole_rsmq_next_visible_seconds", "next_visible_s", "gauge",
         "Seconds until the next hidden (in-flight or delayed) message becomes visible."),
    ):
        values = [(q, q.extras.get(key)) for q in rsmq if q.extras.get(key) is not None]
        if not values:
            continue
        lines += [f"# HELP {metric} {text}", f"# TYPE {metric} {kind}"]
        for q, v in values:
            lines.append(f'{metric}{{root="{root}",queue="{_label(q.name)}"}} {v}')
    lines += [
        "# HELP qconsole_scan_errors Problems a scan found in a queue (unreadable, misnamed files).",
        "# TYPE qconsole_scan_errors gauge",
    ]
    for q in scan.queues:
        lines.append(f'qconsole_scan_errors{{root="{root}",queue="{_label(q.name)}"}} {len(q.errors)}')
    lines += [
        "# HELP qconsole_scan_duration_seconds Time the scan of the root took.",
        "# TYPE qconsole_scan_duration_seconds gauge",
        f'qconsole_scan_duration_seconds{{root="{root}"}} {scan.duration_s:.6f}',
        "# HELP qconsole_scan_timestamp_seconds When the scan was taken (Unix time).",
        "# TYPE qconsole_scan_timestamp_seconds gauge",
        f'qconsole_scan_timestamp_seconds{{root="{root}"}} {now:.3f}',
    ]
    return "\n".join(lines) + "\n"
