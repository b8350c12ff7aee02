"""Untrusted text (payloads, file names) made safe to show on a terminal.

Rich and Textual pass ESC/CSI/OSC and C1 bytes straight to the terminal and parse
``[...]`` markup in plain strings (``[@click=app.quit]`` is an action). Every path that
displays queue data goes through :func:`escape_controls` (plain strings) or
:func:`safe_text` (a ``rich.text.Text`` that is never parsed as markup).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up time)

if TYPE_CHECKING:  # Rich is imported only when a Text is actually built
    import re

    from rich.text import Text

# C0 except \t and \n, DEL, C1, and lone surrogates (undecodable file-name bytes),
# plus the Unicode bidi overrides and line/paragraph separators that can disguise text, and
# the invisible ones (soft hyphen, zero-width space/joiners, marks, word joiner, BOM): two
# queue names or ids that differ only by one of them looked the same.
_UNSAFE_CLASS = (r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069"
                 r"\u00ad\u061c\u200b-\u200f\u2060-\u2064\ufeff]")
_UNSAFE: list[re.Pattern[str]] = []  # compiled on first use: see escape_controls
_NAMES = {"\x1b": "\\e", "\r": "\\r", "\x00": "\\0", "\x7f": "\\x7f"}


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    named = _NAMES.get(ch)
    if named:
        return named
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape'd byte from os.listdir
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def escape_controls(text: str, *, keep_newlines: bool = True) -> str:
    """Replace control characters with visible escapes (``ESC`` -> ``\\e``)."""
    if text.isascii() and text.isprintable():
        # nothing to escape (printable ASCII holds no control, not even \t or \n): the usual
        # queue name, without importing re (~4 ms of `check`'s start, run every minute)
        return text
    if not _UNSAFE:
        import re

        _UNSAFE.append(re.compile(_UNSAFE_CLASS))
    out = _UNSAFE[0].sub(_visible, text)
    if not keep_newlines:
        out = out.replace("\n", "\\n").replace("\t", "\\t")
    return out


def safe_text(text: str | bytes, style: str = "", *, keep_newlines: bool = True) -> "Text":
    """A Rich Text of untrusted data: controls visible, markup never interpreted."""
    from rich.text import Text

    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="backslashreplace")
    # Text(...) (unlike Text.from_markup or a plain str in a renderable) never parses markup.
    return Text(escape_controls(text, keep_newlines=keep_newlines), style=style, end="")


def safe_name(name: str) -> str:
    """A file name or id on one line, controls escaped (for tables and status lines)."""
    return escape_controls(name, keep_newlines=False)
