"""`ls` and `stats` tables without Rich: the text must be the bytes Rich prints, or None (then Rich prints).

The comparison runs against the real Rich Console over random rows, widths and terminal
environments, so a Rich upgrade that prints differently fails here, not on an operator's screen.
"""

from __future__ import annotations

import io
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from qconsole.model import Message
from qconsole.model import QueueScan, RootScan
from qconsole.output.tables import messages_table, messages_terminal, stats_table, stats_terminal
from qconsole.output.term_table import Screen, simple_table, terminal_width
from qconsole.states import STATES

NOW = 1_795_713_700.0

ids = st.one_of(
    st.integers(10**15, 10**16 - 1).map(str),  # VSQS µs ids
    st.text("0123456789abcdef", min_size=32, max_size=32),  # ddmq: shortened to 12 + …
    st.text(min_size=0, max_size=30),  # RSMQ members: anything (controls, wide characters, markup)
)
messages = st.builds(
    lambda layout, mid, state, prio, created, deadline: Message(
        "q", layout, mid, state, mid, priority=prio, priority_text=None if prio is None else str(prio),
        created_at=created, deadline=deadline),
    st.sampled_from(("vsqs", "ddmq")), ids, st.sampled_from(STATES), st.none() | st.integers(-9, 99999),
    st.none() | st.floats(NOW - 9e6, NOW + 9e6), st.none() | st.floats(NOW - 9e6, NOW + 9e6),
)
environs = st.fixed_dictionaries({
    "TERM": st.sampled_from(("xterm", "xterm-256color", "screen-16color", "xterm-kitty", "dumb", "unknown", "")),
    "COLORTERM": st.sampled_from(("", "truecolor", "24bit")),
    "NO_COLOR": st.sampled_from(("", "1")),
    "COLUMNS": st.one_of(st.integers(20, 220), st.sampled_from((0, 80, 100, 120, 132, 160, 200, 250))).map(str),
    "LINES": st.sampled_from(("", "24", "x")),  # with COLUMNS, Rich takes COLUMNS on a dumb terminal too
})
queue_names = st.one_of(st.sampled_from(("q00", "jobs", "a" * 70)), st.text(min_size=1, max_size=40))


def rich_prints(queue: str, msgs: list[Message], sizes: dict[str, int | None], notes: list[str],
                env: dict[str, str]) -> str:
    """What ls_view's Rich path prints on a terminal with ``env``."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, highlight=False, soft_wrap=False, _environ=env)
    console.print(messages_table(queue, msgs, NOW, sizes))
    for note in notes:
        console.print(note)
    return out.getvalue()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queue=queue_names, msgs=st.lists(messages, max_size=12), env=environs,
       size=st.none() | st.integers(0, 10**12), limited=st.booleans())
def test_the_table_is_richs_byte_for_byte_or_left_to_rich(queue, msgs, env, size, limited):
    sizes = {m.relpath: size for m in msgs}
    notes = [f"{len(msgs)} of {len(msgs) + 5} shown (--limit)"] if limited else []
    text = messages_terminal(queue, msgs, NOW, sizes, notes, environ=env)
    if text is not None:
        assert text == rich_prints(queue, msgs, sizes, notes, env)


def test_the_usual_table_is_written_without_rich():
    """The common case must take the fast path at all: short ids, all states, a typical width."""
    msgs = [Message("q", "vsqs", str(10**15 + i), state, str(10**15 + i), created_at=NOW - 60 * i,
                    deadline=None if state == "ready" else NOW + 30 - 40 * i) for i, state in enumerate(STATES)]
    msgs.append(Message("q", "ddmq", "0123456789abcdef" * 2, "inflight", "work/x", 3, "3", NOW - 5, NOW + 9))
    for env in ({"TERM": "xterm-256color", "COLUMNS": "80"}, {"TERM": "xterm", "NO_COLOR": "1", "COLUMNS": "80"},
                {"TERM": "dumb", "COLUMNS": "300"}):
        text = messages_terminal("jobs", msgs, NOW, {"work/x": 2048}, ["7 of 9 shown (--limit)"], environ=env)
        assert text is not None, env
        assert text == rich_prints("jobs", msgs, {"work/x": 2048}, ["7 of 9 shown (--limit)"], env)
    assert "\x1b[32mready" in messages_terminal("jobs", msgs, NOW, {}, [], environ={"COLUMNS": "80"})


def test_what_only_rich_can_say_is_left_to_it():
    msgs = [Message("q", "vsqs", "1795713694746677", "ready", "1795713694746677", created_at=NOW)]
    assert messages_terminal("q", msgs, NOW, {}, [], environ={"COLUMNS": "40"}) is None  # Rich shrinks columns
    wide = [Message("q", "rsmq", "日本語", "ready", "日本語", created_at=NOW)]
    assert messages_terminal("q", wide, NOW, {}, [], environ={"COLUMNS": "80"}) is None  # two cells a character
    assert messages_terminal("q" * 70, msgs, NOW, {}, [], environ={"COLUMNS": "200"}) is None  # title wraps
    assert simple_table(Screen(True, {"COLUMNS": "80"}), "t", ["a"], [[("x", "bold italic")]], [False]) is None


def test_the_width_is_the_terminals_unless_columns_says(tmp_path):
    """As Rich: $COLUMNS when numeric, else the first of stdin/stdout/stderr that is a terminal."""
    assert terminal_width({"COLUMNS": "123"}) == 123
    master, slave = pty.openpty()
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 97, 0, 0))
        code = "from qconsole.output.term_table import terminal_width as w; print(w({}), w({'COLUMNS': 'x'}))"
        res = subprocess.run([sys.executable, "-c", code], stdin=slave, capture_output=True, text=True, check=True,
                             env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
        assert res.stdout.split() == ["97", "97"]
        res = subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             check=True, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
        assert res.stdout.split() == ["80", "80"]
    finally:
        os.close(master)
        os.close(slave)


def test_ls_on_a_terminal_imports_no_rich_and_fills_its_width(tmp_path):
    """`qconsole ls` on a 97-column terminal: the table as Rich prints it there, no Rich imported."""
    root = tmp_path / "root"
    queue = root / "jobs"
    queue.mkdir(parents=True)
    ids = [str(1_795_713_600_000_000 + i) for i in range(3)]
    for mid in ids:
        (queue / mid).write_bytes(b"x" * 5)
    master, slave = pty.openpty()
    try:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 97, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
        env["TERM"] = "xterm-256color"
        code = ("import sys; from qconsole.__main__ import main; sys.argv = ['qconsole'] + sys.argv[1:]\n"
                "try:\n    main()\nfinally:\n    sys.stderr.write('RICH' if 'rich' in sys.modules else 'NORICH')")
        res = subprocess.run([sys.executable, "-c", code, "ls", "jobs", "-r", str(root)], stdin=slave, stdout=slave,
                             stderr=subprocess.PIPE, env=env, timeout=60)
        os.close(slave)
        slave = -1
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert res.returncode == 0 and res.stderr.decode().endswith("NORICH"), res.stderr
    text = out.decode().replace("\r\n", "\n")  # the terminal's line discipline
    lines = text.split("\n")
    assert lines[0] == "jobs".ljust(97)
    assert [line.split()[:3] for line in lines[3:6]] == [[str(n), i, "\x1b[32mready\x1b[0m"] for n, i in enumerate(ids, 1)]


def test_at_the_edge_of_the_terminal_width():
    """A table exactly as wide as the terminal is written; one column narrower is Rich's to shrink."""
    msgs = [Message("q", "vsqs", "1795713694746677", "expired", "x", created_at=NOW - 9, deadline=NOW - 3)]
    table_width = len(rich_prints("q", msgs, {}, [], {"COLUMNS": "200"}).split("\n")[2])  # the rule
    for width in range(table_width - 2, table_width + 3):
        env = {"TERM": "xterm", "COLUMNS": str(width)}
        text = messages_terminal("q", msgs, NOW, {}, [], environ=env)
        assert (text is None) == (width < table_width), width
        if text is not None:
            assert text == rich_prints("q", msgs, {}, [], env)


def test_a_listing_with_warnings_is_printed_by_rich_with_them(tmp_path):
    """Warnings wrap at the terminal's width, which Rich does: the whole listing goes there."""
    queue = tmp_path / "root" / "jobs"
    queue.mkdir(parents=True)
    (queue / "1795713600000").write_bytes(b"ms")  # a millisecond id beside microsecond ones
    (queue / "1795713600000001").write_bytes(b"us")
    env = {**os.environ, "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": "60"}
    res = subprocess.run([sys.executable, "-m", "qconsole", "ls", "jobs", "-r", str(tmp_path / "root")],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.split("\n")
    assert lines[0] == "jobs".ljust(60) and "1795713600000001" in res.stdout
    text = " ".join(line.strip() for line in lines[3:])  # the rows, then the warning, wrapped
    assert "warning mixed id units (ms and µs): numeric order delivers the shorter ids first" in text
    assert max(len(re.sub("\x1b\\[[0-9;]*m", "", line)) for line in lines) <= 60 and len([line for line in lines if "warning" in line]) == 1


counts = st.one_of(st.integers(0, 999), st.integers(0, 10**7))
#: warnings and errors: mostly plain text (the Rich-free path), some anything (left to Rich)
notes = st.one_of(*[st.from_regex(r"[ -~]{0,50}", fullmatch=True)] * 3, st.text(max_size=60))
few_notes = st.one_of(st.just([]), st.just([]), st.just([]), st.lists(notes, max_size=2))
queue_scans = st.builds(
    lambda name, layout, c, oldest, deadline, warnings, errors: QueueScan(
        name, layout, NOW, counts=dict(zip(STATES, c)), oldest_ready_created=oldest, next_deadline=deadline,
        warnings=warnings, errors=errors),
    st.one_of(*[st.from_regex(r"[a-z0-9_-]{1,30}", fullmatch=True)] * 3, st.text(min_size=1, max_size=20)),
    st.sampled_from(("vsqs", "ddmq", "rsmq")), st.lists(counts, min_size=len(STATES), max_size=len(STATES)),
    st.none() | st.floats(NOW - 9e6, NOW), st.none() | st.floats(NOW - 100, NOW + 9e6),
    few_notes, few_notes,
)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qs=st.lists(queue_scans, min_size=0, max_size=6), env=environs, terminal=st.booleans(),
       root=st.sampled_from(("/shared/queues", "redis://127.0.0.1:6379?ns=rsmq", "/x")),
       root_errors=st.lists(notes, max_size=2))
def test_the_stats_table_is_richs_byte_for_byte_or_left_to_rich(qs, env, terminal, root, root_errors):
    layout = qs[0].layout if qs else "vsqs"
    for q in qs:
        q.layout = layout
    scan = RootScan(root=root, layout=layout, generated_at=NOW, duration_s=0.1, queues=qs, errors=root_errors)
    text = stats_terminal(scan, terminal, environ=env)
    if text is not None:
        out = io.StringIO()
        Console(file=out, force_terminal=terminal, highlight=False, soft_wrap=False, _environ=env).print(stats_table(scan))
        assert text == out.getvalue()


def test_the_usual_stats_table_is_written_without_rich():
    qs = [QueueScan(f"q{i}", "vsqs", NOW, counts={**dict.fromkeys(STATES, 0), "ready": i * 7, "inflight": i},
                    oldest_ready_created=NOW - 90 * i, next_deadline=NOW + 5 * i) for i in range(4)]
    qs[1].errors.append("1795713694746678: named like a message but not a regular file")
    scan = RootScan(root="/shared/queues", layout="vsqs", generated_at=NOW, duration_s=0.1, queues=qs)
    for terminal, env in ((True, {"TERM": "xterm-256color", "COLUMNS": "100"}), (False, {"COLUMNS": "80"}),
                          (True, {"TERM": "xterm", "NO_COLOR": "1", "COLUMNS": "80"})):
        text = stats_terminal(scan, terminal, environ=env)
        assert text is not None, env
        out = io.StringIO()
        Console(file=out, force_terminal=terminal, highlight=False, soft_wrap=False, _environ=env).print(stats_table(scan))
        assert text == out.getvalue()
        assert ("\x1b[" in text) is terminal and "error q1: 1795713694746678" in re.sub("\x1b\\[[0-9;]*m", "", text)


def test_stats_on_a_small_root_imports_no_rich():
    """The table operators type most: `qconsole stats ROOT`, piped and on a (declared) terminal.
    The root is a short path, as /shared/queues is: a title wider than the table (pytest's
    tmp_path under two workers, 79 characters beside a 76-wide table) is Rich's to wrap."""
    root = tempfile.mkdtemp(prefix="qs", dir="/tmp")
    try:
        _stats_imports_no_rich(root)
    finally:
        shutil.rmtree(root)


def _stats_imports_no_rich(root: str) -> None:
    os.mkdir(os.path.join(root, "jobs"))
    with open(os.path.join(root, "jobs", "1795713694746677"), "wb") as fh:
        fh.write(b"x")
    code = ("import sys; from qconsole.__main__ import main; sys.argv = ['qconsole'] + sys.argv[1:]\n"
            "try:\n    main()\nfinally:\n    sys.stderr.write('RICH' if 'rich' in sys.modules else 'NORICH')")
    # an operator's plain environment, whatever other tests of this worker left in os.environ
    # (a leaked TERM, LINES, locale or encoding is each a case Rich has to judge)
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8", "TERM": "xterm-256color", "COLUMNS": "90"}
    for extra in ({}, {"TTY_COMPATIBLE": "1"}):
        res = subprocess.run([sys.executable, "-c", code, "stats", root], capture_output=True, text=True,
                             env={**base, **extra}, timeout=60)
        assert res.returncode == 0 and res.stderr.endswith("NORICH"), (extra, res.stderr, res.stdout)
        assert re.sub("\x1b\\[[0-9;]*m", "", res.stdout).splitlines()[3].split()[:3] == ["jobs", "1", "0"]


def test_a_dumb_terminal_with_columns_and_lines_and_columns_0_take_richs_width():
    """Rich's Console.size: a dumb terminal is 80 wide unless $LINES is a number beside $COLUMNS
    (TERM=dumb COLUMNS=300 LINES=24: 300); COLUMNS=0 is 0 wide (Rich prints nothing)."""
    msgs = [Message("q", "vsqs", "1795713694746677", "ready", "x", created_at=NOW - 9)]
    for env in ({"TERM": "dumb", "COLUMNS": "300", "LINES": "24"}, {"TERM": "dumb", "COLUMNS": "300"},
                {"TERM": "xterm", "COLUMNS": "0"}, {"TERM": "xterm", "COLUMNS": "0", "LINES": "24"}):
        text = messages_terminal("q", msgs, NOW, {}, [], environ=env)
        assert (text if text is not None else "") == rich_prints("q", msgs, {}, [], env), env


def test_an_output_that_is_not_utf8_gets_richs_ascii_table(tmp_path):
    """PYTHONIOENCODING=latin-1 (or a Latin-1 locale) on a terminal: Rich draws its ASCII box;
    writing the UTF-8 rule there failed ('internal error: UnicodeEncodeError')."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "1795713694746677").write_bytes(b"x")
    env = {**{k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")},
           "COLUMNS": "90", "TTY_COMPATIBLE": "1"}
    for enc in ("latin-1", "ascii"):
        for args in (["stats", str(tmp_path)], ["ls", "jobs", "-r", str(tmp_path)]):
            res = subprocess.run([sys.executable, "-m", "qconsole", *args], capture_output=True,
                                 env={**env, "PYTHONIOENCODING": enc}, timeout=60)
            assert res.returncode == 0, (enc, args, res.stderr)
            assert b"+----" in res.stdout and b"jobs" in res.stdout
    assert Screen(True, {"COLUMNS": "80"}, encoding="ISO-8859-1").known is False
    assert Screen(True, {"COLUMNS": "80"}, encoding="UTF-8").known is True
