"""The typer application object and the console-script entry point."""

from __future__ import annotations

import os
import sys

import typer

app = typer.Typer(
    name="qconsole",
    help="Administration and monitoring console for serverless message queues (VSQS, ddmq, RSMQ).\n\n"
    "`qconsole ROOT` opens the live console; the commands below script it.",
    no_args_is_help=False,
    # typer's --install-completion/--show-completion (rewrite_argv passes them through)
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: the command that `qconsole [ROOT]` means when no command name is given
DEFAULT_COMMAND = "open"


def _command_names() -> set[str]:
    names = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands if c.callback}
    names |= {g.name for g in app.registered_groups if g.name}
    return names


#: options every command takes, allowed before the command name too (value-taking ones marked)
GLOBAL_OPTIONS = {"--read-only": False, "--layout": True, "--audit-log": True, "--root": True, "-r": True}


def rewrite_argv(argv: list[str]) -> list[str]:
    """`qconsole`, `qconsole ROOT` and `qconsole --read-only ROOT` mean `qconsole open ...`;
    `qconsole --read-only purge q` means `qconsole purge --read-only q`."""
    if argv[:1] and argv[0] in ("-h", "--help", "--version", "--install-completion", "--show-completion"):
        return argv
    leading: list[str] = []
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name = argv[i].partition("=")[0]
        if name not in GLOBAL_OPTIONS:
            break
        takes_value = GLOBAL_OPTIONS[name] and "=" not in argv[i]
        leading.extend(argv[i : i + 1 + takes_value])
        i += 1 + takes_value
    rest = argv[i:]
    if rest and rest[0] in _command_names():
        return [rest[0], *leading, *rest[1:]]
    return [DEFAULT_COMMAND, *argv]


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


def main() -> None:
    from . import register_all

    register_all()
    args = rewrite_argv(take_connection_options(sys.argv[1:]))
    if args[:1] == ["--version"]:
        from .. import __version__

        print(f"qconsole {__version__}")
        return
    try:
        app(args=args, prog_name="qconsole")
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as err:  # last resort: one line, never a traceback (QCONSOLE_DEBUG=1 shows it)
        if os.environ.get("QCONSOLE_DEBUG"):
            raise
        sys.stderr.write(f"qconsole: internal error: {err.__class__.__name__}: {err} (QCONSOLE_DEBUG=1 for details)\n")
        sys.exit(70)
