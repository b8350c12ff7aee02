"""Terminal safety in the settings form (issue 9, class 7): values and keys from a shared
ddmq.yaml (an OSC window title, an OSC 52 clipboard write) are shown escaped, never raw,
and opening the form without touching a field writes nothing."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

pytest.importorskip("textual")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from test_tui_app import make_app, open_queue, settle  # noqa: E402

from qconsole.demo import build_fixture  # noqa: E402


@pytest.fixture
def roots(tmp_path: Any) -> tuple[str, str]:
    return build_fixture(str(tmp_path))


async def test_settings_form_escapes_yaml_values(roots: tuple[str, str]) -> None:
    droot, _ = roots
    cfg = os.path.join(droot, "emails", "ddmq.yaml")
    with open(cfg, "w") as fh:
        fh.write('title: "\\e]0;pwned\\a"\nclip: "\\e]52;c;cHduZWQ=\\a"\n"\\e[31mkey": 1\nmessage_timeout: 30\n')
    before = open(cfg, "rb").read()
    app = make_app([droot])
    async with app.run_test(size=(100, 30)) as pilot:
        await open_queue(pilot, "emails")
        await pilot.press("s")
        await settle(pilot)
        values = [inp.value for inp in app.screen.query("Input")]
        labels = [str(label.content) for label in app.screen.query("Label")]
        shown = "\n".join(values + labels)
        assert "\x1b" not in shown and "\x07" not in shown, repr(shown)
        assert "\\e]0;pwned" in shown and "\\e]52;c;" in shown
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert open(cfg, "rb").read() == before  # nothing was changed: nothing was written
