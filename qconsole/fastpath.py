"""``qconsole stats`` (JSON, Prometheus text or the table) without importing typer.

Monitoring agents run this every few seconds and operators type it all day. typer (and the
pydantic import behind it) costs more start-up than scanning a 200k-message root (~170 ms),
so the console script answers the one-shot forms here and hands anything else (--watch,
--help, an option this parser does not know or a value it doubts) to the typer CLI, which
defines the behaviour. Tests check that both paths give the same output, errors and exit codes.
"""

from __future__ import annotations

import json
import os
import sys
from .errors import QConsoleError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any

MACHINE_FORMATS = ("json", "prometheus")
FORMATS = (*MACHINE_FORMATS, "table")


def pick_root(positional: str | None, option: str | None) -> str | None:
    """A positional ROOT wins over --root, which falls back to $QCONSOLE_ROOT."""
    return positional or option or os.environ.get("QCONSOLE_ROOT") or None


def render_machine(scan: Any, fmt: str, *, pretty: bool) -> str:
    """A RootScan as the stats JSON document or Prometheus text."""
    if fmt == "json":
        from .output.stats_json import stats_document

        return json.dumps(stats_document(scan), indent=2 if pretty else None, ensure_ascii=True) + "\n"
    from .output import prometheus

    return prometheus.render(scan)


def _parse(argv: list[str]) -> dict[str, Any] | None:
    """The options of ``stats`` this path takes, or None to let typer handle the call."""
    opts: dict[str, Any] = {"root": None, "root_opt": None, "json": False, "fmt": None,
                            "layout": "auto", "queues": [], "check_types": False,
                            "jobs": None}
    it = iter(argv)
    for arg in it:
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in ("--format", "-f", "--queue", "-q", "--root", "-r", "--layout", "--audit-log", "--jobs", "-j"):
            if not eq:
                nxt = next(it, None)
                if nxt is None:
                    return None
                value = nxt
            if name in ("--format", "-f"):
                if value not in FORMATS:
                    return None
                opts["fmt"] = value
            elif name in ("--queue", "-q"):
                opts["queues"].append(value)
            elif name in ("--root", "-r"):
                opts["root_opt"] = value
            elif name == "--layout":
                opts["layout"] = value
            elif name in ("--jobs", "-j"):
                if not (value.isascii() and value.isdigit() and int(value) >= 1):
                    return None  # typer says what is wrong with it
                opts["jobs"] = int(value)
        elif arg == "--json":
            opts["json"] = True
        elif arg == "--check-types":
            opts["check_types"] = True
        elif arg == "--read-only":
            pass
        elif not arg.startswith("-") and opts["root"] is None:
            opts["root"] = arg
        else:
            return None
    opts["fmt"] = "json" if opts["json"] else (opts["fmt"] or "table")
    return opts


def write_stats(scan: Any, fmt: str, *, pretty: bool) -> None:
    """A RootScan to stdout in one of FORMATS (the table through Rich, imported only for it)."""
    if fmt in MACHINE_FORMATS:
        sys.stdout.write(render_machine(scan, fmt, pretty=pretty))
    else:
        from rich.console import Console

        from .output.tables import stats_table

        Console(highlight=False, soft_wrap=False).print(stats_table(scan))
    sys.stdout.flush()


def fast_stats(argv: list[str]) -> int | None:
    """Run one-shot ``stats``; the exit code, or None when typer must handle the call."""
    opts = _parse(argv)
    if opts is None:
        return None
    from .backends import open_target

    try:
        handle = open_target(pick_root(opts["root"], opts["root_opt"]), opts["layout"])
        scan = handle.scan(opts["queues"] or None, check_types=opts["check_types"], jobs=opts["jobs"])
        write_stats(scan, opts["fmt"], pretty=True)
    except QConsoleError as err:
        return _fail(str(err), err.exit_code)
    except PermissionError as err:
        return _fail(f"permission denied: {err.filename or err}")
    except BrokenPipeError:
        os._exit(0)
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        return _fail(f"{where}{err.strerror or err}")
    return 0


def _fail(message: str, code: int = 2) -> int:
    from .safetext import escape_controls

    sys.stderr.write(f"qconsole: {escape_controls(message, keep_newlines=False)}\n")
    return code
