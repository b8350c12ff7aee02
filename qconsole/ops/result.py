"""What every operation returns, and the errors only operations raise."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..errors import OperationError, QConsoleError  # noqa: F401 (OperationError re-exported)

from ..backends.results import ALREADY_READY, CHANGED, CONSUMED, NOT_HELD, NOT_IN_QUEUE, TrashBatch  # noqa: F401 (re-exported)


class ReadOnlyError(QConsoleError):
    """A mutation asked for in read-only mode; raised before anything is touched."""




@dataclass
class OpResult:
    action: str
    queue: str | None
    done: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)
    batch: str | None = None  # trash batch id for delete/purge
    #: changes sent whose answer never came (a change stopped by a lost connection): done or not
    unknown: int = 0

    def summary(self, *, command_hint: bool = True) -> str:
        """One line for a status bar or the CLI (``command_hint``: with the shell command that
        undoes it, which the console, where ``u`` does and several roots may be open, leaves out)."""
        where = f" {self.queue}" if self.queue else ""
        line = f"{self.action}{where}: {len(self.done)} done"
        if self.skipped:
            reasons = Counter(reason for _id, reason in self.skipped)
            detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
            line += f", {len(self.skipped)} skipped ({detail})"
        if self.unknown:
            line += f", up to {self.unknown} more may have been done (sent, no answer)"
        if self.batch:
            line += f"; trash batch {self.batch}"
            if command_hint:
                line += f" (undo: qconsole trash restore {self.batch})"
        return line
