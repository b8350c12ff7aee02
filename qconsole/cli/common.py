"""What every command shares: the root/layout/read-only/audit options and error handling."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any, Optional, TypeVar

import typer

from ..errors import ExitCode, QConsoleError, error_line, interrupted_line
from ..backends import pick_root  # noqa: F401 (shared with the typer-free stats path)
from ..fastpath import write_error

F = TypeVar("F", bound=Callable[..., Any])

ROOT_HELP = ("Queue root directory, or an RSMQ target: redis://[user@]host[:port][/db][?ns=NAME], "
             "rediss://... (TLS; --ca PATH, --insecure), unix:///path/redis.sock (or $QCONSOLE_ROOT).")

RootArg = Annotated[Optional[str], typer.Argument(help=ROOT_HELP, show_default=False)]
RootOpt = Annotated[
    Optional[str],
    typer.Option("--root", "-r", envvar="QCONSOLE_ROOT", help=ROOT_HELP, show_default=False),
]
LayoutOpt = Annotated[
    str, typer.Option("--layout", help="Layout of the root: auto, vsqs, ddmq (rsmq for a Redis target).", case_sensitive=False)
]
ReadOnlyOpt = Annotated[
    bool,
    typer.Option("--read-only", envvar="QCONSOLE_READ_ONLY", help="Refuse every change (or QCONSOLE_READ_ONLY=1)."),
]
AuditLogOpt = Annotated[
    Optional[str],
    typer.Option("--audit-log", help="Append the audit log here instead of <root>/.qconsole/audit.log (Redis targets: ~/.local/state/qconsole/audit.log).",
                 show_default=False),
]
CheckTypesOpt = Annotated[
    bool,
    typer.Option("--check-types",
                 help="Also read each entry's type from the listing (no stat): FIFOs, symlinks and "
                      "other non-files named like messages count as foreign, not by their names."),
]
JobsOpt = Annotated[
    Optional[int],
    typer.Option("--jobs", "-j", min=1,
                 help="Processes to scan with (default: by the root's size, at most 4; 1 = no forking).",
                 show_default=False),
]
QueueArg = Annotated[str, typer.Argument(help="Queue name (a plain name: no '/' or '..').", show_default=False)]


def fail(message: str, code: int = ExitCode.ERROR) -> "typer.Exit":
    """Print one line on stderr and return the Exit to raise."""
    write_error(message)
    return typer.Exit(code)


def guarded(func: F) -> F:
    """Turn operator errors into one line and a non-zero exit instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:  # `qconsole ls q | head` (an OSError: must come first)
            os._exit(0)
        except (QConsoleError, OSError) as err:
            line, code = error_line(err)  # type: ignore[misc]
            raise fail(line, code) from None
        except KeyboardInterrupt as err:
            line = interrupted_line(err)  # a change stopped half-way says what it did
            if line:
                write_error(line)
            raise typer.Exit(ExitCode.INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]
