"""One queue whose keys are of the wrong type is one error row in `report`, the rest is
reported (review C, finding 10): a RootError from ZCARD/ZRANGE of a planted string escaped
into Spark, and `report` failed as a whole with an empty reason (exit 70 with --verbose)."""

from __future__ import annotations

import pytest

from qconsole.backends import open_target
from qconsole.report import inventory

from .conftest import qconsole


def _rows(url: str, queue: str, size: int = 100) -> list[dict]:
    handle = open_target(url)
    location = inventory.location_of("rsmq", url, handle)
    names = inventory.COLUMN_NAMES
    chunks = list(inventory.list_chunks("rsmq", location, queue, handle.now(), size=size))
    return [dict(zip(names, row)) for c in chunks for row in zip(*inventory.read_chunk(c))]


@pytest.mark.parametrize("planted", ["zset", "hash"])
def test_a_wrong_type_queue_is_one_error_row(node, url, r, ns, planted):
    node.run(("createQueue", {"qname": "good"}), ("sendMessage", {"qname": "good", "message": "m1"}),
             ("createQueue", {"qname": "bad"}), ("sendMessage", {"qname": "bad", "message": "m2"}))
    key = f"{ns}:bad" if planted == "zset" else f"{ns}:bad:Q"
    r.delete(key)
    r.set(key, "hello")
    (row,) = _rows(url, "bad")
    assert row["queue"] == "bad" and row["id"] is None and row["state"] is None
    assert "not of the type rsmq writes" in row["error"] and f"{ns}:bad" in row["error"], row
    good = _rows(url, "good")
    assert [g["state"] for g in good] == ["ready"] and good[0]["error"] is None


def test_a_range_whose_key_turned_wrong_type_after_the_listing_is_one_error_row(node, url, r, ns):
    node.run(("createQueue", {"qname": "q"}), *[("sendMessage", {"qname": "q", "message": f"m{i}"}) for i in range(5)])
    handle = open_target(url)
    location = inventory.location_of("rsmq", url, handle)
    chunks = list(inventory.list_chunks("rsmq", location, "q", handle.now(), size=2))
    r.delete(f"{ns}:q")
    r.set(f"{ns}:q", "planted")
    cols = inventory.read_chunk(chunks[1])
    (row,) = [dict(zip(inventory.COLUMN_NAMES, row)) for row in zip(*cols)]
    assert row["error"].startswith("ranks 2-3: ") and "WRONGTYPE" in row["error"], row


@pytest.mark.spark
def test_cli_report_reports_the_rest_beside_a_planted_queue(node, url, r, ns, tmp_path):
    node.run(("createQueue", {"qname": "good"}), ("sendMessage", {"qname": "good", "message": "m1"}),
             ("createQueue", {"qname": "zstr"}))
    r.set(f"{ns}:zstr", "hello")
    out = qconsole("report", url, "--out", str(tmp_path / "rep"), timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "Traceback" not in out.stderr and "good" in out.stdout, out.stdout
