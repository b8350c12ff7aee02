"""Tables as Rich prints them, for the cases Rich needs no judgement on, without importing Rich.

Importing Rich costs ~45 ms, twice a small queue's whole ``qconsole ls`` or a small root's
``stats``, which operators type all day. When every cell is plain one-column text and the
table fits, Rich's ``SIMPLE_HEAD`` table (``tables._table``: no box between cells, padding
collapsed, title left) is columns two apart with a few fixed ANSI styles. This writes
exactly the bytes Rich writes there (tests compare them over random tables, widths and
terminal environments) and answers None for everything else (a cell Rich would measure, a
table it would shrink, a title or note it would wrap), which the caller prints through Rich.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    #: a cell: its text, or its text and a style name
    Cell = str | tuple[str, str]

#: SGR codes of the styles these tables use (Rich writes a standard colour the same way for
#: every colour system: 16, 256 or true colour)
_CODES = {"bold": "1", "green": "32", "cyan": "36", "red": "31", "blue": "34", "yellow": "33", "magenta": "35"}
#: the one character beyond ASCII the tables write (short ids): one column, as Rich counts it
_ELLIPSIS = "…"


def _plain(text: str) -> bool:
    """One terminal column per character, as Rich measures it: printable ASCII (and …)."""
    return (text.isascii() or text.replace(_ELLIPSIS, "").isascii()) and text.isprintable()


def terminal_width(environ: Mapping[str, str] | None = None, *, dumb: bool = False) -> int:
    """The width Rich's Console takes (``Console.size``): ``$COLUMNS`` when it is a number (0
    too: Rich then prints nothing), else the first of stdin, stdout and stderr that is a
    terminal, else 80; on a ``dumb`` terminal 80 unless ``$LINES`` is a number as well."""
    env = os.environ if environ is None else environ
    columns, lines = env.get("COLUMNS"), env.get("LINES")
    if columns is not None and columns.isdigit():
        if not dumb or (lines is not None and lines.isdigit()):
            return int(columns)
    if dumb:
        return 80
    width = None
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
            break
        except (AttributeError, ValueError, OSError):
            pass
    return width or 80


class Screen:
    """Where the text goes, as Rich's Console judges it: ``mode`` "colour", "bold" (``NO_COLOR``:
    Rich drops colours, keeps bold) or "" (no escapes: not a terminal, or a dumb one); ``width``.
    ``known`` is False where this module does not know Rich's answer (not a POSIX system, an
    ``encoding`` that is not UTF-8)."""

    def __init__(self, terminal: bool, environ: Mapping[str, str] | None = None, encoding: str | None = None) -> None:
        env = os.environ if environ is None else environ
        if encoding is None:  # Rich's Console.encoding: stdout's
            import sys

            encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        # an output that is not UTF-8 (PYTHONIOENCODING=latin-1, a Latin-1 locale) gets Rich's
        # ASCII box, which this module does not write (writing '─' there fails)
        self.known = os.name == "posix" and encoding.lower().startswith("utf")
        dumb = terminal and env.get("TERM", "").lower() in ("dumb", "unknown")
        self.mode = "" if not terminal or dumb else "bold" if env.get("NO_COLOR", "") != "" else "colour"
        self.width = terminal_width(env, dumb=dumb)

    def styled(self, text: str, style: str) -> str:
        """``text`` as Rich writes it in ``style`` (one of ``_CODES``, or "") here."""
        if not text or not style or not self.mode or (style != "bold" and self.mode != "colour"):
            return text
        return f"\x1b[{_CODES[style]}m{text}\x1b[0m"


def simple_table(screen: Screen, title: str, header: Sequence[str], rows: Sequence[Sequence[Cell] | None],
                 right: Sequence[bool], column_styles: Sequence[str] = (),
                 notes: Sequence[tuple[str, str, str]] = ()) -> str | None:
    """The text Rich prints on ``screen`` for the table ``title``/``header``/``rows`` (a row None
    is a section break: ``add_section``), columns right-justified where ``right`` says and
    their data cells and pads in ``column_styles``, then the ``notes`` lines (prefix, its
    style, text). None when only Rich can say."""
    if not screen.known:
        return None
    col_styles = list(column_styles) or [""] * len(header)
    cells: list[list[tuple[str, str]] | None] = []
    for row in rows:
        if row is None:
            cells.append(None)
            continue
        out = []
        for i, cell in enumerate(row):
            text, style = (cell, "") if isinstance(cell, str) else cell
            if style and col_styles[i]:
                return None  # two styles combined: Rich's to write
            out.append((text, style))
        cells.append(out)
    styles = {*col_styles, *(style for row in cells if row for _, style in row), *(n[1] for n in notes)}
    texts = [title, *header, *(text for row in cells if row for text, _ in row), *(p + t for p, _, t in notes)]
    if not styles <= {"", *_CODES} or not all(map(_plain, texts)):
        return None  # a style not known here, or a cell Rich would measure
    widths = [max([len(header[i]), *(len(row[i][0]) for row in cells if row)]) for i in range(len(header))]
    inner = sum(widths) + 2 * (len(widths) - 1)  # each column's pad and the blank border after it
    table_width = inner + 2
    if table_width > screen.width or len(title) > table_width or any(len(p + t) > screen.width for p, _, t in notes):
        return None  # Rich would shrink the table, or wrap its title or a note

    def line(row: Sequence[tuple[str, str]], pad_styles: Sequence[str]) -> str:
        parts = []
        for i, ((text, style), w) in enumerate(zip(row, widths)):
            fill = " " * (w - len(text))
            parts.append(screen.styled(fill + text if right[i] else text + fill, style or pad_styles[i]))
            if i < len(widths) - 1:
                parts.append(screen.styled(" ", pad_styles[i]) + " ")
        return " " + "".join(parts) + " \n"

    # the title, padded to the table's width, runs on into SIMPLE_HEAD's blank top edge, all cut at
    # the terminal's width (the title Texts of tables.py end with "", not a new line)
    out = [(title.ljust(table_width) + " " * table_width)[:screen.width] + "\n",
           line([(h, "bold") for h in header], ["bold"] * len(header)), " " + "─" * inner + " \n"]
    blank = " " * table_width + "\n"
    out += [blank if row is None else line(row, col_styles) for row in cells]
    out.append(blank)  # SIMPLE_HEAD's blank bottom edge
    out += [screen.styled(prefix, style) + text + "\n" for prefix, style, text in notes]
    return "".join(out)
