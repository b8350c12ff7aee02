"""The console script: ``qconsole ...`` and ``python -m qconsole ...``.

The monitoring path (``stats`` in JSON/Prometheus form) is answered without importing typer;
everything else goes to the typer CLI in :mod:`qconsole.cli`.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["stats"]:
        from .fastpath import fast_stats

        code = fast_stats(argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
