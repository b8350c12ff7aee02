"""Leftovers recover leaves alone are each named and counted (review A #6): planted claims
sharing one token were all left (rightly) but only one file was named, so the messages hidden
under the others' claim names went unreported."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness import DEAD_PID, HOST, qconsole_bin
from peers import ddmq_broker
from qconsole.backends import open_target
from qconsole.backends.fs.claims import encode_rel
from qconsole.ops import Operations

QC = ".qconsole-"
TOKEN = "deadbeef"


def _ops(root: str) -> Operations:
    return Operations(open_target(root), audit_log=os.path.join(root, "..", "audit.log"))


def _root(tmp_path, layout: str) -> tuple[str, list[str]]:
    """Queues a and b, with five ready messages in a (by the real client for ddmq)."""
    root = str(tmp_path / layout)
    if layout == "ddmq":
        broker = ddmq_broker(root, "a", "b")
        for i in range(5):
            broker.publish("a", f"m{i}", clean=False)
    else:
        for q in ("a", "b"):
            os.makedirs(os.path.join(root, q))
        _ops(root).publish("a", [f"m{i}".encode() for i in range(5)])
    names = sorted(n for n in os.listdir(os.path.join(root, "a")) if not n.startswith(".") and n != "ddmq.yaml")
    return root, names


def _claim(root: str, name: str, rel: str | None = None, token: str = TOKEN) -> str:
    """Hide ready message ``name`` under a dead qconsole's claim (its name's path: ``rel``)."""
    cname = f"{QC}claim-{HOST}-{DEAD_PID}-{token}-{encode_rel(rel if rel is not None else name)}"
    os.rename(os.path.join(root, "a", name), os.path.join(root, "a", cname))
    return f"a/{cname}"


def _listing(root: str) -> list[str]:
    return sorted(os.listdir(os.path.join(root, "a")))


def _recover(root: str) -> tuple[int, str, str]:
    p = subprocess.run([qconsole_bin(), "recover", "-r", root], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
@pytest.mark.parametrize("with_bad", [True, False], ids=["one-bad-name", "all-valid"])
def test_every_claim_sharing_a_token_is_named_and_counted(tmp_path, layout, with_bad):
    root, names = _root(tmp_path, layout)
    planted = [_claim(root, n) for n in names[:3]]
    if with_bad:  # a path out of its queue: a name that does not validate
        planted.append(_claim(root, names[3], rel=f"../b/{names[3]}"))
    before = _listing(root)
    code, out, err = _recover(root)
    assert code == 1 and err == "", (code, out, err)
    lines = out.splitlines()
    assert lines[0].endswith(f", {len(planted)} problems"), lines[0]
    problems = [ln for ln in lines if ln.startswith("  problem: ")]
    assert len(problems) == len(planted), problems
    for rel in planted:  # each file left is on a line of its own
        assert sum(ln.startswith(f"  problem: {rel}: ") for ln in problems) == 1, (rel, problems)
        assert ln_says_left(problems, rel)
    assert _listing(root) == before  # all left alone, as before


def ln_says_left(problems: list[str], rel: str) -> bool:
    return any(ln.startswith(f"  problem: {rel}: ") and ln.endswith("left alone") for ln in problems)


def test_a_claim_beside_an_irregular_leftover_of_its_token_is_named(tmp_path):
    root, names = _root(tmp_path, "vsqs")
    claim = _claim(root, names[0])
    fifo = f"a/{QC}tmp-{HOST}-{DEAD_PID}-{TOKEN}"
    os.mkfifo(os.path.join(root, fifo))
    rep = _ops(root).recover()
    assert len(rep.problems) == 2, rep.problems
    assert rep.problems[0].startswith(f"{fifo}: not a regular file")
    assert rep.problems[1].startswith(f"{claim}: its token's leftover {fifo} is not a regular file")
    assert os.path.exists(os.path.join(root, claim))


def test_a_claim_beside_a_journal_that_does_not_validate_is_named(tmp_path):
    root, names = _root(tmp_path, "vsqs")
    claim = _claim(root, names[0])
    journal = f"a/{QC}journal-{HOST}-{DEAD_PID}-{TOKEN}"
    with open(os.path.join(root, journal), "w") as fh:
        json.dump({"token": TOKEN, "src": names[0], "dest": "../outside", "commit_from": "x", "final": "y"}, fh)
    rep = _ops(root).recover()
    assert len(rep.problems) == 2, rep.problems
    assert rep.problems[0].startswith(f"{journal}: journal does not validate")
    assert rep.problems[1].startswith(f"{claim}: its token's journal {journal} does not validate")
    assert os.path.exists(os.path.join(root, claim)) and os.path.exists(os.path.join(root, journal))
