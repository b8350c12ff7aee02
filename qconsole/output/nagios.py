"""``qconsole check``: a Nagios/Icinga plugin line and exit code from a scan."""

from __future__ import annotations

from ..model import QueueScan, RootScan
from ..safetext import safe_name
from ..states import DELAYED, EXPIRED, READY

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable

    #: one queue's (name, level, problem texts, perfdata)
    Part = tuple[str, int, list[str], str]

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
#: the most of the root's first error the status line shows (the rest is in `stats`)
ROOT_ERROR_CHARS = 120
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
    """A perfdata label for the queue: the name itself when it holds only safe characters;
    otherwise the name made safe plus ``~`` and a hash of the real name. Graphing tools keep
    one series per label, so ``a b`` and ``a_b`` must not both be ``a_b`` (one queue's figures
    overwrote the other's); ``~`` is never in a label kept as it is, so no two queues share one."""
    if _LABEL_CHARS.issuperset(name):  # the usual name, without importing re
        return name
    import hashlib
    import re

    # a cryptographic hash: a crc32 was forged in a second ('q+|[%{' and 'q[@* +' shared one)
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", name) + f"~{digest}"


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


def queue_part(t: Thresholds) -> Callable[[QueueScan, float], Part]:
    """What one queue adds to the plugin line: (its name, level, problem texts, perfdata),
    made where the queue was scanned (a forked scanner: the ``each`` of Backend.scan), so a
    root of thousands of queues is not formatted queue by queue in one process afterwards."""
    metrics = [(what, key, warn, crit, unit, f"{unit};{_fmt(warn)};{_fmt(crit)};0;")
               for what, key, warn, crit, unit in (("ready", READY, t.warn_ready, t.crit_ready, ""),
                                                   ("age", None, t.warn_age, t.crit_age, "s"),
                                                   ("expired", EXPIRED, t.warn_expired, t.crit_expired, ""))]

    def part(q: QueueScan, now: float) -> Part:
        level = OK
        problems: list[str] = []
        label = _perf_label(q.name)
        perf: list[str] = []
        for what, key, warn, crit, unit, tail in metrics:
            value = q.counts[key] if key is not None else (q.oldest_ready_age(now) or 0.0)
            lvl = _level(value, warn, crit)
            if lvl != OK:
                problems.append(f"{_text_name(q.name)} {what}={_fmt(value)}{unit} ({NAMES[lvl]})")
                level = max(level, lvl)
            perf.append(f"{label}_{what}={_fmt(value)}{tail}")
        if q.extras is not None:  # RSMQ: delayed messages and the queue's own counters
            perf.append(f"{label}_delayed={q.counts[DELAYED]};;;0;")
            for key in ("totalsent", "totalrecv"):
                if q.extras.get(key) is not None:
                    perf.append(f"{label}_{key}={q.extras[key]}c;;;0;")
            if q.extras.get("received_more_than_once") is not None:
                perf.append(f"{label}_redelivered={q.extras['received_more_than_once']};;;0;")
        if q.errors:
            problems.append(f"{_text_name(q.name)}: {len(q.errors)} scan error(s)")
            level = max(level, WARNING)
        return q.name, level, problems, " ".join(perf)

    return part


def evaluate(scan: RootScan, t: Thresholds, parts: list[Part] | None = None) -> tuple[int, str]:
    """(exit code, the one status line with perfdata). ``parts``: each queue's
    :func:`queue_part` of ``t``, in the scan's order, when the scan made them."""
    if parts is None or [p[0] for p in parts] != [q.name for q in scan.queues]:
        part = queue_part(t)  # (parts made otherwise, or not in the scan's order: made again here)
        parts = [part(q, scan.generated_at) for q in scan.queues]
    status = max((p[1] for p in parts), default=OK)
    problems = [text for p in parts for text in p[2]]
    if scan.errors:  # a queue the root holds but nobody counts (a symlinked queue, a planted
        # ddmq.yaml, a name the store refuses): a blind spot, never OK without a word
        first = _text_name(scan.errors[0])
        first = first if len(first) <= ROOT_ERROR_CHARS else first[:ROOT_ERROR_CHARS - 1] + "…"
        more = f" (+{len(scan.errors) - 1} more)" if len(scan.errors) > 1 else ""
        problems.insert(0, f"root: {first}{more}")
        status = max(status, WARNING)
    totals = scan.totals()
    summary = f"{len(scan.queues)} queues, {totals[READY]} ready, {totals['inflight']} inflight, {totals[EXPIRED]} expired"
    if any(q.extras is not None for q in scan.queues):
        summary += f", {totals[DELAYED]} delayed"
    text = summary if not problems else "; ".join(problems) + f" - {summary}"
    return status, f"QCONSOLE {NAMES[status]} - {text} | " + " ".join(p[3] for p in parts)
