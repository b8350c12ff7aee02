"""``qconsole check``: a Nagios/Icinga plugin line and exit code from a scan."""

from __future__ import annotations

from ..model import RootScan
from ..safetext import safe_name
from ..states import DELAYED, EXPIRED, READY

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", UNKNOWN: "UNKNOWN"}


class Thresholds:
    """Per-queue thresholds (None: not checked). A plain class: ``check`` starts without
    importing dataclasses (Nagios runs it every minute on every host)."""

    __slots__ = ("warn_ready", "crit_ready", "warn_age", "crit_age", "warn_expired", "crit_expired")

    def __init__(self, warn_ready: int | None = None, crit_ready: int | None = None, warn_age: float | None = None,
                 crit_age: float | None = None, warn_expired: int | None = None,
                 crit_expired: int | None = None) -> None:
        self.warn_ready, self.crit_ready = warn_ready, crit_ready
        self.warn_age, self.crit_age = warn_age, crit_age
        self.warn_expired, self.crit_expired = warn_expired, crit_expired

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Thresholds) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return "Thresholds(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


#: what a perfdata label may hold as it is
_LABEL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-")


def _perf_label(name: str) -> str:
    # perfdata labels: no quotes or '=', keep it to a safe charset
    if _LABEL_CHARS.issuperset(name):  # the usual name, without importing re
        return name
    import re

    return re.sub(r"[^A-Za-z0-9_.:-]", "_", name)


def _text_name(name: str) -> str:
    # '|' starts the perfdata in a plugin line: a queue name must not inject its own
    return safe_name(name).replace("|", "/")


def _level(value: float, warn: float | None, crit: float | None) -> int:
    if crit is not None and value >= crit:
        return CRITICAL
    if warn is not None and value >= warn:
        return WARNING
    return OK


def _fmt(x: float | None) -> str:
    if x is None:
        return ""
    return str(int(x)) if float(x).is_integer() else f"{x:.3f}"


def evaluate(scan: RootScan, t: Thresholds) -> tuple[int, str]:
    """(exit code, the one status line with perfdata)."""
    now = scan.generated_at
    status = OK
    problems: list[str] = []
    perf: list[str] = []
    for q in scan.queues:
        ready, expired = q.counts[READY], q.counts[EXPIRED]
        age = q.oldest_ready_age(now) or 0.0
        for what, value, warn, crit, unit in (
            ("ready", ready, t.warn_ready, t.crit_ready, ""),
            ("age", age, t.warn_age, t.crit_age, "s"),
            ("expired", expired, t.warn_expired, t.crit_expired, ""),
        ):
            lvl = _level(value, warn, crit)
            if lvl != OK:
                problems.append(f"{_text_name(q.name)} {what}={_fmt(value)}{unit} ({NAMES[lvl]})")
                status = max(status, lvl)
            perf.append(f"{_perf_label(q.name)}_{what}={_fmt(value)}{unit};{_fmt(warn)};{_fmt(crit)};0;")
        if q.extras is not None:  # RSMQ: delayed messages and the queue's own counters
            perf.append(f"{_perf_label(q.name)}_delayed={q.counts[DELAYED]};;;0;")
            for key in ("totalsent", "totalrecv"):
                if q.extras.get(key) is not None:
                    perf.append(f"{_perf_label(q.name)}_{key}={q.extras[key]}c;;;0;")
            if q.extras.get("received_more_than_once") is not None:
                perf.append(f"{_perf_label(q.name)}_redelivered={q.extras['received_more_than_once']};;;0;")
        if q.errors:
            problems.append(f"{_text_name(q.name)}: {len(q.errors)} scan error(s)")
            status = max(status, WARNING)
    totals = scan.totals()
    summary = f"{len(scan.queues)} queues, {totals[READY]} ready, {totals['inflight']} inflight, {totals[EXPIRED]} expired"
    if any(q.extras is not None for q in scan.queues):
        summary += f", {totals[DELAYED]} delayed"
    text = summary if not problems else "; ".join(problems) + f" - {summary}"
    return status, f"QCONSOLE {NAMES[status]} - {text} | " + " ".join(perf)
