"""The typer application object and the console-script entry point."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer

from ..fastpath import take_connection_options  # (typer-free: the fast path strips them the same way)

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


def _one_line_usage_errors() -> None:
    """Bad options get one clear line on stderr and exit 2, like every other bad input
    (click's default is a usage block, a hint and the error on three or more lines)."""
    try:  # typer >= 0.2x vendors click; older ones use click itself
        from typer._click.exceptions import UsageError  # type: ignore[import-not-found]
    except ImportError:
        try:
            from click.exceptions import UsageError  # type: ignore[no-redef]
        except ImportError:
            return

    def show(self: Any, file: object = None) -> None:
        from ..safetext import escape_controls

        cmd = self.ctx.command_path if self.ctx is not None else "qconsole"
        msg = escape_controls(self.format_message(), keep_newlines=False)
        sys.stderr.write(f"qconsole: {msg} (see {cmd} -h)\n")

    UsageError.show = show  # type: ignore[method-assign]


_one_line_usage_errors()  # for every way in (the console script, CliRunner, the TUI's CLI)


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
        from ..errors import ExitCode, internal_error_line

        sys.stderr.write(f"qconsole: {internal_error_line(err)}\n")
        sys.exit(ExitCode.INTERNAL)
