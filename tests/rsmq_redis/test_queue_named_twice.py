"""`stats -q a -q a` on an RSMQ target counted the queue twice (totals, Prometheus series,
Nagios perfdata), as on a file root: each queue once."""

from __future__ import annotations

import json

from .conftest import qconsole


def test_a_queue_named_twice_is_counted_once(node, url):
    node.call("createQueue", qname="jobs")
    node.call("createQueue", qname="other")
    for i in range(3):
        node.call("sendMessage", qname="jobs", message=f"m{i}")
    twice = ["-q", "jobs", "-q", "other", "-q", "jobs"]
    doc = json.loads(qconsole("stats", url, "--json", *twice).stdout)
    assert [q["name"] for q in doc["queues"]] == ["jobs", "other"]
    assert doc["totals"]["queues"] == 2 and doc["totals"]["ready"] == 3
    prom = qconsole("stats", url, "--format", "prometheus", *twice).stdout
    series = [line.rsplit(" ", 1)[0] for line in prom.splitlines() if not line.startswith("#")]
    assert series and len(series) == len(set(series))
    res = qconsole("check", url, *twice)
    assert res.returncode == 0 and "2 queues, 3 ready" in res.stdout, res.stdout
    perf = res.stdout.split("|", 1)[1].split()
    assert len(perf) == len({p.split("=")[0] for p in perf})
