"""A table on a terminal as Rich prints it, for the cases Rich needs no judgement on, without Rich.

Importing Rich costs ~45 ms, twice a small queue's whole ``qconsole ls``, which operators
type all day. When every cell is plain one-column text and the table fits the terminal,
Rich's ``SIMPLE_HEAD`` table (``tables._table``: no box between cells, padding collapsed,
title left) is columns two apart with a few fixed ANSI styles. This writes exactly the
bytes Rich writes there (a test compares them over random rows, widths and terminal
environments) and answers None for everything else (a cell Rich would measure, a table
it would shrink, a title it would wrap), which the caller prints through Rich.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

#: SGR codes of the styles these tables use (Rich writes a standard colour the same way for
#: every colour system: 16, 256 or true colour)
_COLOURS = {"green": "32", "cyan": "36", "red": "31", "blue": "34", "yellow": "33", "magenta": "35"}
_BOLD = "1"
#: the one character beyond ASCII the tables write (short ids): one column, as Rich counts it
_ELLIPSIS = "…"


def _plain(text: str) -> bool:
    """One terminal column per character, as Rich measures it: printable ASCII (and …)."""
    return (text.isascii() or text.replace(_ELLIPSIS, "").isascii()) and text.isprintable()


def terminal_width(environ: Mapping[str, str] | None = None) -> int:
    """The width Rich's Console takes on this terminal: ``$COLUMNS`` when it is a number, else
    the first of stdin, stdout and stderr that is a terminal, else 80."""
    env = os.environ if environ is None else environ
    width = None
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
            break
        except (AttributeError, ValueError, OSError):
            pass
    columns = env.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    return width or 80


def _style_mode(env: Mapping[str, str]) -> str | None:
    """"colour", "bold" (``NO_COLOR``: Rich drops colours, keeps bold), "" (a dumb terminal:
    no escapes), or None where this module does not know Rich's answer (not a POSIX system)."""
    if os.name != "posix":
        return None
    if env.get("TERM", "").lower() in ("dumb", "unknown"):
        return ""
    return "bold" if env.get("NO_COLOR", "") != "" else "colour"


def simple_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool],
                 cell_styles: Mapping[int, Mapping[str, str]], notes: Sequence[str] = (),
                 environ: Mapping[str, str] | None = None) -> str | None:
    """The text Rich's Console prints on this terminal for the table ``title``/``header``/
    ``rows`` (columns right-justified where ``right`` says; a cell of column ``i`` styled
    ``cell_styles[i][text]``) followed by the plain ``notes`` lines; None when only Rich
    can say (a cell beyond plain text, a table or note wider than the terminal, a style not
    known here, a title longer than the table, not a POSIX terminal)."""
    env = os.environ if environ is None else environ
    mode = _style_mode(env)
    if mode is None or not all(map(_plain, (title, *header, *notes))):
        return None
    if not all(_plain(cell) for row in rows for cell in row):
        return None
    width = 80 if mode == "" else terminal_width(env)
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    inner = sum(widths) + 2 * (len(widths) - 1)  # each column's pad and the blank border after it
    if inner + 2 > width or len(title) > inner + 2 or any(len(note) > width for note in notes):
        return None

    def styled(text: str, style: str) -> str:
        if not text or not style or not mode or (style != _BOLD and mode != "colour"):
            return text
        return f"\x1b[{style}m{text}\x1b[0m"

    def line(cells: Sequence[str], styles: Sequence[str], pad_style: str) -> str:
        parts = []
        for i, (text, w) in enumerate(zip(cells, widths)):
            fill = " " * (w - len(text))
            parts.append(styled(fill + text if right[i] else text + fill, styles[i]))
            if i < len(widths) - 1:
                parts.append(styled(" ", pad_style) + " ")
        return " " + "".join(parts) + " \n"

    colour_of = {i: {text: _COLOURS.get(s) for text, s in styles.items()} for i, styles in cell_styles.items()}
    # (the title, padded to the table's width, runs on into SIMPLE_HEAD's blank top edge, all cut at
    # the terminal's width: Rich's "end" of a title Text is "")
    out = [(title.ljust(inner + 2) + " " * (inner + 2))[:width] + "\n", line(header, [_BOLD] * len(header), _BOLD), " " + "─" * inner + " \n"]
    for row in rows:
        styles = []
        for i, text in enumerate(row):
            code = colour_of.get(i, {}).get(text, "") if i in colour_of else ""
            if code is None:
                return None  # a style this module cannot write
            styles.append(code)
        out.append(line(row, styles, ""))
    out.append(" " * (inner + 2) + "\n")
    out.extend(note + "\n" for note in notes)
    return "".join(out)
