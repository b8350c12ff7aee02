"""What every operation returns, and the errors only operations raise."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..errors import OperationError, QConsoleError  # noqa: F401 (OperationError re-exported)

from ..backends.results import ALREADY_READY, CHANGED, CONSUMED, NOT_HELD, NOT_IN_QUEUE, TrashBatch  # noqa: F401 (re-exported)


class ReadOnlyError(QConsoleError):
    """A mutation asked for in read-only mode; raised before anything is touched."""


#: distinct skip reasons a summary line names (the most frequent; the lines after it name each skip)
SUMMARY_REASONS = 3
#: characters of one reason in a summary line
REASON_SHOWN = 120


def _cut(reason: str) -> str:
    return reason if len(reason) <= REASON_SHOWN else reason[: REASON_SHOWN - 1] + "…"


@dataclass
class OpResult:
    action: str
    queue: str | None
    done: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)
    batch: str | None = None  # trash batch id for delete/purge
    #: changes sent whose answer never came (a change stopped by a lost connection): done or not
    unknown: int = 0
    #: (processed, total) of a change stopped early that keeps no record per id (the file stores'
    #: requeue, trash restore): how far it got, done or skipped, not which ones
    processed: tuple[int, int] | None = None
    #: where a move went (the summary names it: "move jobs to dlq: 3 done")
    dest: str | None = None

    def summary(self, *, command_hint: bool = True) -> str:
        """One line for a status bar or the CLI (``command_hint``: with the shell command that
        undoes it, which the console, where ``u`` does and several roots may be open, leaves out)."""
        where = (f" {self.queue}" if self.queue else "") + (f" to {self.dest}" if self.dest else "")
        if self.processed is not None and not self.done:
            return (f"{self.action}{where}: stopped after about {self.processed[0]} of {self.processed[1]} "
                    "(done or skipped; not recorded one by one)")
        line = f"{self.action}{where}: {len(self.done)} done"
        if self.skipped:
            # one line: reasons can carry ids or file names, so 2,000 skips made a 192 KB line (review)
            reasons = Counter(reason for _id, reason in self.skipped)
            shown = sorted(reasons.items(), key=lambda rn: (-rn[1], rn[0]))[:SUMMARY_REASONS]
            detail = ", ".join(f"{n} {_cut(r)}" for r, n in shown)
            if len(reasons) > len(shown):
                detail += f", {len(reasons) - len(shown)} other reason(s)"
            line += f", {len(self.skipped)} skipped ({detail})"
        if self.unknown:
            line += f", up to {self.unknown} more may have been done (sent, no answer)"
        if self.batch:
            line += f"; trash batch {self.batch}"
            if command_hint:
                line += f" (undo: qconsole trash restore {self.batch})"
        return line
