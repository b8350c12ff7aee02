"""The console script: ``qconsole ...`` and ``python -m qconsole ...``.

The one-shot monitoring commands (``stats``, ``check``, ``ls``) and the changes that never prompt
(``requeue``, ``delete --yes``, ``purge --yes``, ``move``, ``trash restore``) are answered without
importing typer; everything else goes to the typer CLI in :mod:`qconsole.cli`.
"""

from __future__ import annotations

import sys


#: what the fast path may answer: the command words, as typed
FAST_COMMANDS = (["stats"], ["check"], ["ls"], ["requeue"], ["delete"], ["purge"], ["move"], ["trash", "restore"])


def main() -> None:
    argv = sys.argv[1:]
    words = next((w for w in FAST_COMMANDS if argv[: len(w)] == w), None)
    if words is not None:
        from .fastpath import FAST

        code = FAST[" ".join(words)](argv[len(words):])
        if code is not None:
            _exit(code)
    from .cli import main as cli_main

    try:
        cli_main()
    except SystemExit as done:
        _exit(done.code)


def _exit(code: object) -> None:
    """``sys.exit(code)``; leaving for a ctrl+c, a second one is ignored from here on: it
    landed in the interpreter's shutdown (threading._shutdown, a finalizer), and Python printed
    'Exception ignored in ...' and a traceback under qconsole's `interrupted: ...` line (race
    review)."""
    from .errors import ExitCode  # (loaded already on every path that gets here)

    if code == ExitCode.INTERRUPTED:
        import signal

        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass
    sys.exit(code)


if __name__ == "__main__":
    main()
