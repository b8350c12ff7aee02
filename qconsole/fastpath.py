"""``qconsole stats``, ``check``, ``ls`` and the changes that never prompt without importing typer.

Monitoring agents run this every few seconds and operators type it all day. typer (and the
pydantic import behind it) costs more start-up than scanning a 200k-message root (~170 ms),
so the console script answers the one-shot forms here (``check`` is what Nagios runs every
minute on every host) and hands anything else (--watch,
--help, an option this parser does not know or a value it doubts) to the typer CLI, which
defines the behaviour. Tests check that both paths give the same output, errors and exit codes.
"""

from __future__ import annotations

import os
import sys
from .errors import ExitCode, QConsoleError, error_line, internal_error_line, interrupted_line

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from typing import Any

MACHINE_FORMATS = ("json", "prometheus")
#: the largest age threshold ``check`` takes (100 years, s): more is no age, and went into the
#: perfdata as hundreds of digits
MAX_AGE_S = 3_153_600_000
FORMATS = (*MACHINE_FORMATS, "table")


def render_machine(scan: Any, fmt: str, *, pretty: bool, schema: int = 2) -> str:
    """A RootScan as the stats JSON document (schema ``qconsole.stats/<schema>``) or Prometheus text.
    The pretty document takes the queues' parts the scan wrote (:func:`queue_parts`), if any."""
    if fmt == "json":
        if pretty:
            from .output.stats_json import render_pretty

            return render_pretty(scan, schema, scan.per_queue) + "\n"
        from .output.jsontext import dumps
        from .output.stats_json import stats_document

        return dumps(stats_document(scan, schema), pretty=False) + "\n"
    from .output import prometheus

    return prometheus.render(scan)


#: option kinds: "flag" (no value), "str", "list" (repeatable), "count" (int >= 0), "posint" (int >= 1),
#: "seconds" (plain decimal >= 0), "format". A value this parser doubts sends the call to typer.
#: (--ca and --insecure are taken out of argv first, by take_connection_options, as typer's main does)
_COMMON = {"--root": ("root_opt", "str"), "-r": ("root_opt", "str"), "--layout": ("layout", "str"),
           "--audit-log": ("audit_log", "str"), "--read-only": ("read_only", "flag")}
_SCAN = {**_COMMON, "--queue": ("queues", "list"), "-q": ("queues", "list"), "--check-types": ("check_types", "flag"),
         "--jobs": ("jobs", "posint"), "-j": ("jobs", "posint")}
SPECS: dict[str, dict[str, tuple[str, str]]] = {
    "stats": {**_SCAN, "--json": ("json", "flag"), "--format": ("fmt", "format"), "-f": ("fmt", "format"),
              "--schema": ("schema", "schema")},
    "check": {**_SCAN, **{f"--{w}-{m}": (f"{w}_{m}", "seconds" if m == "age" else "count")
                          for w in ("warn", "crit") for m in ("ready", "age", "expired")}},
    "ls": {**_COMMON, "--state": ("state", "str"), "-s": ("state", "str"), "--limit": ("limit", "posint"),
           "-n": ("limit", "posint"), "--json": ("json", "flag"), "--ids": ("ids", "flag")},
    # the changing commands in the forms that never prompt (see change_commands)
    "requeue": {**_COMMON, "--expired": ("expired", "flag"), "--all": ("all_", "flag")},
    "delete": {**_COMMON, "--yes": ("yes", "flag"), "-y": ("yes", "flag"), "--no-trash": ("no_trash", "flag")},
    "purge": {**_COMMON, "--state": ("state", "str"), "-s": ("state", "str"), "--yes": ("yes", "flag"),
              "-y": ("yes", "flag"), "--no-trash": ("no_trash", "flag")},
    "move": {**_COMMON, "--all": ("all_", "flag"), "--state": ("state", "str"), "-s": ("state", "str")},
    "trash restore": _COMMON,
}
#: positional arguments each command takes, in order
POSITIONALS = {"stats": ("root",), "check": ("root",), "ls": ("queue",), "requeue": ("queue",),
               "delete": ("queue",), "purge": ("queue",), "move": ("src", "dest"),
               "trash restore": ("batch",)}
#: commands whose further positional arguments are message ids
TAKES_IDS = ("requeue", "delete", "move")
#: what click's BoolParamType takes from $QCONSOLE_READ_ONLY (typer parses it even where unused)
_TRUE_WORDS = {"1", "true", "t", "yes", "y", "on"}
_BOOL_WORDS = _TRUE_WORDS | {"0", "false", "f", "no", "n", "off"}


def _value(kind: str, value: str) -> Any:
    """The parsed value, or None when typer should judge it (and say what is wrong)."""
    if kind in ("str", "list"):
        return value
    if kind == "format":
        return value if value in FORMATS else None
    if kind == "schema":
        return int(value) if value in ("1", "2") else None
    if kind in ("count", "posint"):
        if not (value.isascii() and value.isdigit()) or (kind == "posint" and int(value) < 1):
            return None
        return int(value)
    if kind == "seconds":
        whole, dot, frac = value.partition(".")
        ok = whole.isascii() and whole.isdigit() and (not dot or (frac.isascii() and frac.isdigit()))
        # 400 digits made inf, which went into the perfdata: typer's check says what is wrong
        return float(value) if ok and float(value) <= MAX_AGE_S else None
    return None


def parse_args(command: str, argv: list[str]) -> dict[str, Any] | None:
    """The options of ``command`` this path takes, or None to let typer handle the call."""
    spec = SPECS[command]
    argv = take_connection_options(argv)
    env_ro = os.environ.get("QCONSOLE_READ_ONLY")
    if env_ro and env_ro.lower() not in _BOOL_WORDS:
        return None  # typer refuses the variable; let it say so
    opts: dict[str, Any] = {key: False if kind == "flag" else None for key, kind in spec.values()}
    opts.update(queues=[], layout="auto", read_only=bool(env_ro) and env_ro.lower() in _TRUE_WORDS)  # type: ignore[union-attr]
    if command in TAKES_IDS:
        opts["ids"] = []
    positionals = list(POSITIONALS[command])
    opts.update(dict.fromkeys(positionals))
    it = iter(argv)
    for arg in it:
        if not arg.startswith("-") or (arg == "-" and command in TAKES_IDS and not positionals):
            if positionals:
                opts[positionals.pop(0)] = arg
            elif command in TAKES_IDS:
                opts["ids"].append(arg)
            else:
                return None  # an extra argument: typer's error
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name not in spec:
            return None
        key, kind = spec[name]
        if kind == "flag":
            if eq:
                return None
            opts[key] = True
            continue
        if not eq:
            nxt = next(it, None)
            if nxt is None:
                return None
            value = nxt
        parsed = _value(kind, value)
        if parsed is None:
            return None
        if kind == "list":
            opts[key].append(parsed)
        else:
            opts[key] = parsed
    if "queue" in positionals or "dest" in positionals:
        return None  # QUEUE missing: typer's usage error
    if command in ("delete", "purge") and not opts["yes"]:
        return None  # it asks first: typer's prompt
    if command == "delete" and not opts["ids"]:
        return None  # ID... missing: typer's usage error
    if command == "stats":
        opts["fmt"] = "json" if opts["json"] else (opts["fmt"] or "table")
        opts["schema"] = opts["schema"] or 2
    return opts


def take_connection_options(argv: list[str]) -> list[str]:
    """Remove ``--insecure`` and ``--ca PATH`` (Redis TLS options, accepted anywhere before a
    ``--``) and hand them on as $QCONSOLE_REDIS_INSECURE / $QCONSOLE_REDIS_CA to the RSMQ backend."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == "--insecure":
            os.environ["QCONSOLE_REDIS_INSECURE"] = "1"
        elif arg == "--ca" and i + 1 < len(argv):
            os.environ["QCONSOLE_REDIS_CA"] = argv[i + 1]
            i += 1
        elif arg.startswith("--ca="):
            os.environ["QCONSOLE_REDIS_CA"] = arg[5:]
        else:
            out.append(arg)
        i += 1
    return out


def _parse(argv: list[str]) -> dict[str, Any] | None:
    """``stats``' options (kept for callers of the earlier name)."""
    return parse_args("stats", argv)


def queue_parts(fmt: str, schema: int) -> Any:
    """What the scan should write of each queue as it goes, for render_machine: the pretty
    JSON document's part, written by whichever forked scanner counted the queue (that work
    is shared out too); None for the other formats."""
    if fmt != "json":
        return None
    from .output.stats_json import queue_text

    return lambda scan, now: queue_text(scan, now, schema)


def write_stats(scan: Any, fmt: str, *, pretty: bool, schema: int = 2) -> None:
    """A RootScan to stdout in one of FORMATS (the table as Rich prints it, Rich imported only
    where it must judge: :mod:`.output.term_table`)."""
    if fmt in MACHINE_FORMATS:
        sys.stdout.write(render_machine(scan, fmt, pretty=pretty, schema=schema))
    else:
        from .output.plain import to_terminal
        from .output.tables import stats_terminal

        terminal = to_terminal(sys.stdout)
        text = stats_terminal(scan, terminal)
        if text is not None:
            sys.stdout.write(text)
        else:
            from rich.console import Console

            from .output.tables import stats_table

            Console(highlight=False, soft_wrap=False).print(stats_table(scan))
        if not scan.queues and not scan.errors:  # a header alone reads like output cut short (as ls)
            sys.stdout.flush()
            (sys.stdout if terminal else sys.stderr).write("no queues\n")
    sys.stdout.flush()


def fast_stats(argv: list[str]) -> int | None:
    """Run one-shot ``stats``; the exit code, or None when typer must handle the call."""
    opts = _parse(argv)
    if opts is None:
        return None
    from .backends import open_target, pick_root

    def body() -> None:
        handle = open_target(pick_root(opts["root"], opts["root_opt"]), opts["layout"])
        try:
            scan = handle.scan(opts["queues"] or None, check_types=opts["check_types"], jobs=opts["jobs"],
                               each=queue_parts(opts["fmt"], opts["schema"]))
        finally:
            handle.close()  # a Redis connection; nothing for a directory
        write_stats(scan, opts["fmt"], pretty=True, schema=opts["schema"])

    return guarded_call(body)


def check_line(root: str | None, layout: str, queues: list[str] | None, thresholds: dict[str, Any], *,
               check_types: bool, jobs: int | None) -> tuple[int, str]:
    """``qconsole check``: (exit code, the one status line). Any failure is UNKNOWN (3), never a traceback."""
    from .backends import open_target
    from .output.nagios import UNKNOWN, Thresholds, evaluate, queue_part

    try:
        t = Thresholds(**thresholds)
        scan = open_target(root, layout).scan(queues or None, check_types=check_types, jobs=jobs, each=queue_part(t))
        return evaluate(scan, t, scan.per_queue)
    except Exception as err:  # a monitoring plugin answers UNKNOWN (3), never a traceback
        from .safetext import escape_controls

        if isinstance(err, QConsoleError):
            msg = str(err)
        elif isinstance(err, OSError):
            msg = f"{err.filename}: {err.strerror}" if err.filename else (err.strerror or str(err))
        else:
            msg = f"internal error: {err.__class__.__name__}: {err}"
        return UNKNOWN, f"QCONSOLE UNKNOWN - {escape_controls(msg, keep_newlines=False)}"


THRESHOLDS = tuple(f"{w}_{m}" for w in ("warn", "crit") for m in ("ready", "age", "expired"))


def fast_check(argv: list[str]) -> int | None:
    """Run ``check``; the exit code, or None when typer must handle the call."""
    opts = parse_args("check", argv)
    if opts is None:
        return None
    from .backends import pick_root

    try:
        root = pick_root(opts["root"], opts["root_opt"])
    except QConsoleError as err:
        return _fail(*error_line(err))  # type: ignore[misc]
    code, line = check_line(root, opts["layout"], opts["queues"],
                            {k: opts[k] for k in THRESHOLDS}, check_types=opts["check_types"], jobs=opts["jobs"])
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os._exit(code)
    return code


def fast_ls(argv: list[str]) -> int | None:
    """Run ``ls``; the exit code, or None when typer must handle the call."""
    opts = parse_args("ls", argv)
    if opts is None:
        return None
    from .backends import pick_root
    from .output.ls_view import write_ls

    return guarded_call(lambda: write_ls(pick_root(None, opts["root_opt"]), opts["layout"], opts["queue"],
                                         state=opts["state"], limit=opts["limit"], as_json=opts["json"],
                                         ids_only=bool(opts["ids"])))


def fast_change(command: str, argv: list[str]) -> int | None:
    """Run ``requeue``, ``delete``, ``purge``, ``move`` or ``trash restore`` in a form that never prompts; the
    exit code, or None when typer must handle the call."""
    opts = parse_args(command, argv)
    if opts is None:
        return None
    from . import change_commands as changes

    common = (opts["root_opt"], opts["layout"], opts["read_only"], opts["audit_log"])
    ids = opts.get("ids") or None  # (trash restore takes none)
    if command == "requeue":
        return guarded_call(lambda: changes.requeue(opts["queue"], ids, opts["expired"], opts["all_"], *common))
    if command == "delete":
        return guarded_call(lambda: changes.delete(opts["queue"], opts["ids"], True, opts["no_trash"], *common))
    if command == "purge":
        return guarded_call(lambda: changes.purge(opts["queue"], opts["state"], True, opts["no_trash"], *common))
    if command == "trash restore":
        return guarded_call(lambda: changes.trash_restore(opts["batch"], *common))
    return guarded_call(lambda: changes.move(opts["src"], opts["dest"], ids, opts["all_"], opts["state"], *common))


def guarded_call(body: Any) -> int:
    """``body()`` with operator errors as one line on stderr and an exit code, as the typer commands do."""
    try:
        body()
    except BrokenPipeError:  # `qconsole ls q | head` (an OSError: must come first)
        os._exit(0)
    except (QConsoleError, OSError) as err:
        line, code = error_line(err)  # type: ignore[misc]
        return _fail(line, code)
    except KeyboardInterrupt as err:
        # a second ctrl+c (pressed twice) is ignored while the stopped change is freed: it
        # landed in a finalizer (redis-py's Redis.__del__ closing its connections) and Python
        # printed "Exception ignored in ..." and a traceback under our line (race review)
        previous = _ignore_ctrl_c()
        line = interrupted_line(err)  # a change stopped half-way says what it did
        del err
    except Exception as err:  # last resort, as cli.app.main's: one line, never a traceback
        if os.environ.get("QCONSOLE_DEBUG"):
            raise
        return _fail(internal_error_line(err), ExitCode.INTERNAL)
    else:
        return 0
    # (out of the handler: the exception, its traceback and the change's objects are freed, and
    # their finalizers have run, with ctrl+c ignored)
    import gc

    gc.collect()  # (objects in reference cycles too)
    if previous is not None:
        import signal

        signal.signal(signal.SIGINT, previous)
    if line:
        write_error(line)
    return ExitCode.INTERRUPTED


def _ignore_ctrl_c() -> Any:
    """Ignore SIGINT from now on; the handler it had (None where it cannot be set: not the main
    thread, or a handler not set from Python)."""
    import signal

    try:
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:
            return None
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        return None
    return previous


#: the commands answered without typer, by name
FAST = {"stats": lambda argv: fast_stats(argv), "check": lambda argv: fast_check(argv),
        "ls": lambda argv: fast_ls(argv), **{c: (lambda argv, c=c: fast_change(c, argv))
                                            for c in ("requeue", "delete", "purge", "move", "trash restore")}}


def write_error(message: str) -> None:
    """``qconsole: <message>`` on stderr, escaped, as one line (over a bulk change's progress
    line, if one is drawn): what every failing command says, with or without typer."""
    from .safetext import escape_controls

    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
    sys.stderr.write(f"qconsole: {escape_controls(message, keep_newlines=False)}\n")
    sys.stderr.flush()


def _fail(message: str, code: int = 2) -> int:
    write_error(message)
    return code
