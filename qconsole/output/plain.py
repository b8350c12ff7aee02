"""Aligned plain-text columns, for output that goes to a pipe or a file.

Scripts read ``qconsole ls`` piped (``| awk``, ``| grep``); they want one header line, one
line per row, full values and no colour or box characters, and they want it without
Rich's start-up (~60 ms, more than the command's own work on a small queue). The cells
are the caller's: every one holding queue data must already be escaped (safetext).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Sequence


def cell_width(text: str) -> int:
    """Terminal columns of ``text``: wide East Asian characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    import unicodedata  # only for text beyond ASCII (start-up time of a piped `ls`)

    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def field(text: str) -> str:
    """An escaped cell as one whitespace-free word, so ``awk '{print $2}'`` and friends see the
    columns where they are: spaces (any Unicode space) as ``\\x20``/``\\u3000`` escapes, an
    empty value as ``""``. (Exact values: ``--json``.)"""
    if not text:
        return '""'
    if text.isprintable() and not any(map(str.isspace, text)):
        return text
    return "".join(f"\\x{ord(c):02x}" if c.isspace() and ord(c) < 0x100 else f"\\u{ord(c):04x}" if c.isspace()
                   else c for c in text)


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """Lines of ``header`` and ``rows``, columns two spaces apart, right-aligned where
    ``right`` says; no trailing blanks."""
    table = [list(header), *[list(r) for r in rows]]
    widths = [max(cell_width(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for row in table:
        cells = []
        for text, width, flush_right in zip(row, widths, right):
            pad = " " * (width - cell_width(text))
            cells.append(pad + text if flush_right else text + pad)
        lines.append("  ".join(cells).rstrip())
    return lines


def to_terminal(stream: object) -> bool:
    """Whether ``stream`` gets terminal output (Rich's table, colours), judged as Rich judges it
    (``TTY_COMPATIBLE``, then ``FORCE_COLOR``, then isatty), so ``FORCE_COLOR=1 qconsole ls q |
    less -R`` still shows the table, without importing Rich to ask."""
    import os

    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = os.environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
