"""The console script: ``qconsole ...`` and ``python -m qconsole ...``.

The one-shot monitoring commands (``stats``, ``check``, ``ls``) and the changes that never prompt
(``requeue``, ``delete --yes``, ``purge --yes``, ``move``) are answered without importing typer;
everything else goes to the typer CLI in :mod:`qconsole.cli`.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] in (["stats"], ["check"], ["ls"], ["requeue"], ["delete"], ["purge"], ["move"]):
        from .fastpath import FAST

        code = FAST[argv[0]](argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
