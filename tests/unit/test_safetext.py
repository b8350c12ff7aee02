"""Terminal safety: untrusted payloads and names never reach the terminal raw, markup never parsed."""

from __future__ import annotations

import base64
import json
import os

import pytest
from typer.testing import CliRunner

from qconsole.cli import app, register_all
from qconsole.safetext import escape_controls, safe_name, safe_text

register_all()
runner = CliRunner()

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # set the clipboard
CSI = "\x1b[2J\x1b[31m"  # clear screen, red
C1 = "\x9b31m"  # 8-bit CSI
OSC8 = "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"
CLICK = "[@click=app.quit]quit[/]"
MARKUP = "[red]markup[/]"
NASTY = f"a{OSC52}b{CSI}c{C1}d{OSC8}{CLICK}{MARKUP}\r\x00\x7f\u202e"
#: the same, as a file name can hold it (no '/' or NUL)
NAME = NASTY.replace("/", "|").replace("\x00", "")
RAW_BYTES = ("\x1b", "\x9b", "\x07", "\x00", "\x7f", "\r", "\u202e")


def assert_terminal_safe(out: str) -> None:
    for ch in RAW_BYTES:
        assert ch not in out, (ch, out)
    assert not any(0x80 <= ord(c) <= 0x9F for c in out)


def test_escape_controls_makes_everything_visible():
    out = escape_controls(NASTY)
    assert_terminal_safe(out)
    assert "\\e]52;c;" in out and "\\x9b31m" in out and "\\r\\0\\x7f\\u202e" in out
    assert CLICK in out and MARKUP in out  # brackets kept as they are
    assert escape_controls("a\nb\tc") == "a\nb\tc"
    assert safe_name("a\nb\tc") == "a\\nb\\tc"
    assert escape_controls("caf\udce9") == "caf\\xe9"  # undecodable file-name byte


def test_invisible_characters_are_shown():
    """Two names differing by an invisible character looked the same (orders / ord\u200bers)."""
    for ch in ("\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u00ad", "\u061c"):
        out = escape_controls(f"ord{ch}ers")
        assert ch not in out and out != "orders" and out.startswith("ord\\"), (ch, out)
    assert escape_controls("café 👍 日本") == "café 👍 日本"  # visible text is left as it is


def test_safe_text_never_parses_markup():
    from rich.console import Console

    t = safe_text(NASTY)
    assert t.spans == [] and CLICK in t.plain
    console = Console(record=True, width=200, color_system=None, force_terminal=True)
    console.print(t)
    out = console.export_text()
    assert_terminal_safe(out)
    assert "[@click=app.quit]quit[/]" in out and "[red]markup[/]" in out
    assert safe_text(b"\xff\x1b").plain == "\\xff\\e"


@pytest.fixture
def nasty_vsqs(tmp_path):
    q = tmp_path / "jobs"
    q.mkdir()
    (q / "1700000000000000").write_text(NASTY)
    (q / "1700000000000001").write_text(json.dumps({"k": NASTY, NASTY: 1}))
    (q / "1700000000000003").write_text(NAME)  # text (no NUL): escaped, not hex-dumped
    (q / f"1700000000000002.{NAME}").write_text("x")  # foreign, nasty name
    return str(tmp_path)


@pytest.fixture
def nasty_ddmq(ddmq_root):
    root, b = ddmq_root
    b.publish("jobs", NASTY, priority=5)
    b.publish("jobs", json.dumps({"k": NASTY}), priority=6)
    b.publish("jobs", NAME, priority=4)
    os.mkdir(os.path.join(root, "jobs", f"7.1700000000.ddmq{'c' * 32}"))  # error line names it
    open(os.path.join(root, "jobs", f"x{NAME}.ddmq"), "w").close()
    return root


@pytest.mark.parametrize("which", ["nasty_vsqs", "nasty_ddmq"])
def test_every_output_of_a_nasty_queue_is_terminal_safe(request, which):
    root = request.getfixturevalue(which)
    env = {"COLUMNS": "300"}
    outputs = []
    for args in (["stats", root], ["stats", root, "--json"], ["stats", root, "--format", "prometheus"],
                 ["check", root], ["ls", "jobs", "-r", root], ["ls", "jobs", "-r", root, "--json"]):
        res = runner.invoke(app, args, env=env)
        assert res.exit_code in (0, 1), (args, res.output)
        outputs.append(res.output)
    ids = [m["id"] for m in json.loads(outputs[-1])["messages"]]
    for ident in ids:
        for extra in ([], ["--json"]):
            res = runner.invoke(app, ["peek", "jobs", ident, "-r", root, *extra], env=env)
            assert res.exit_code == 0, res.output
            outputs.append(res.output)
            if extra:
                doc = json.loads(res.stdout)  # still valid JSON, payload intact
                if "payload_base64" in doc:  # the NUL makes it binary
                    assert base64.b64decode(doc["payload_base64"]) == NASTY.encode()
                else:
                    payload = doc["payload"]
                    assert payload == NAME or NASTY in [*payload, *payload.values()]
    for out in outputs:
        assert_terminal_safe(out)
    peeks = "".join(outputs[6:])
    assert "[@click=app.quit]quit[/]" in peeks and "[red]markup[/]" in peeks
    assert "\\e]52;c;" in peeks and "\\x9b31m" in peeks


def test_error_lines_are_escaped(tmp_path):
    res = runner.invoke(app, ["stats", str(tmp_path / f"no{CSI}where")])
    assert res.exit_code == 2 and "\\e[2J" in res.stderr
    assert_terminal_safe(res.stderr)
    res = runner.invoke(app, ["check", str(tmp_path / f"no{OSC52}")])
    assert res.exit_code == 3
    assert_terminal_safe(res.stdout)
