"""Reading one payload for peek: kinds, caps, ddmq fields, never following links or FIFOs."""

from __future__ import annotations

import json
import os
import pathlib

import pytest

from qconsole.errors import MessageNotFoundError, QConsoleError
from qconsole.model import Message
from qconsole.backends import backend_class
from qconsole.payload import BINARY, DEFAULT_CAP, JSON, TEXT, classify, hexdump


def _q(tmp_path):
    """Queue ``q`` of a root at tmp_path that both layouts accept (ddmq.yaml and work/)."""
    q = tmp_path / "q"
    (q / "work").mkdir(parents=True, exist_ok=True)
    (q / "ddmq.yaml").touch()
    return q


def read_payload(root, msg, cap=DEFAULT_CAP):
    """The payload through the message's backend, as peek reads it."""
    _q(pathlib.Path(root))
    return backend_class(msg.layout)(root).read_payload(msg, cap)


def _vsqs(tmp_path, data: bytes, name="1700000000000000"):
    (_q(tmp_path) / name).write_bytes(data)
    return Message("q", "vsqs", name, "ready", name)


def _ddmq(tmp_path, doc, raw: bytes | None = None):
    name = "9.17000000001.ddmq" + "a" * 32
    (_q(tmp_path) / name).write_bytes(raw if raw is not None else json.dumps(doc).encode())
    return Message("q", "ddmq", "a" * 32, "ready", name, 9, "9")


def test_kinds(tmp_path):
    p = read_payload(str(tmp_path), _vsqs(tmp_path, b'{"a": [1, 2]}'))
    assert p.kind == JSON and p.parsed == {"a": [1, 2]} and '"a": [' in p.pretty()
    p = read_payload(str(tmp_path), _vsqs(tmp_path, "héllo".encode()))
    assert p.kind == TEXT and p.pretty() == "héllo"
    p = read_payload(str(tmp_path), _vsqs(tmp_path, b"\x00\x01\xff"))
    assert p.kind == BINARY and p.pretty().startswith("00000000  00 01 ff")
    assert read_payload(str(tmp_path), _vsqs(tmp_path, b"42")).kind == TEXT  # scalars are text


def test_cap_and_uncapped(tmp_path):
    msg = _vsqs(tmp_path, b"x" * 100_000)
    p = read_payload(str(tmp_path), msg, cap=1000)
    assert p.truncated and len(p.body) == 1000 and p.size == 100_000
    p = read_payload(str(tmp_path), msg, cap=None)
    assert not p.truncated and len(p.body) == 100_000


def test_cap_cutting_a_multibyte_character_is_still_text(tmp_path):
    p = read_payload(str(tmp_path), _vsqs(tmp_path, "é".encode() * 1000), cap=1001)
    assert p.kind == TEXT and p.truncated


def test_ddmq_fields_beside_the_message(tmp_path):
    p = read_payload(str(tmp_path), _ddmq(tmp_path, {"message": '{"job": 1}', "priority": 9, "requeue_counter": 2}))
    assert p.kind == JSON and p.parsed == {"job": 1}
    assert p.fields == {"priority": 9, "requeue_counter": 2} and p.error is None
    p = read_payload(str(tmp_path), _ddmq(tmp_path, {"message": {"not": "a string"}}))
    assert p.kind == JSON and p.parsed == {"not": "a string"}


@pytest.mark.parametrize("raw", [b'{"message": "cut', b"", b"[1]", b'{"no_message": 1}', b"\xff\xfe{"])
def test_ddmq_corrupt_files_are_shown_with_an_error(tmp_path, raw):
    p = read_payload(str(tmp_path), _ddmq(tmp_path, None, raw))
    assert p.error and "half-written or corrupt" in p.error and p.body == raw


def test_symlinks_fifos_and_vanished_files(tmp_path):
    (_q(tmp_path) / "secret").write_text("s")
    os.symlink(_q(tmp_path) / "secret", _q(tmp_path) / "1700000000000001")
    with pytest.raises(QConsoleError, match="symlink"):
        read_payload(str(tmp_path), Message("q", "vsqs", "1", "ready", "1700000000000001"))
    os.mkfifo(_q(tmp_path) / "1700000000000002")
    with pytest.raises(QConsoleError, match="not a regular file"):
        read_payload(str(tmp_path), Message("q", "vsqs", "2", "ready", "1700000000000002"))
    with pytest.raises(MessageNotFoundError, match="gone"):
        read_payload(str(tmp_path), Message("q", "vsqs", "3", "ready", "1700000000000003"))


def test_classify_and_hexdump():
    assert classify(b"plain") == TEXT and classify(b"a\x00b") == BINARY and classify(b"\xff\xfe" * 10) == BINARY
    assert hexdump(b"AB\x00") == "00000000  41 42 00" + " " * 39 + "  AB."
