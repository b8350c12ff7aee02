"""A publish option's problem names it as its form label and its flag read (``requeue limit``,
``--requeue-limit``), not by its field name (``requeue_limit``), which the operator never sees
(TUI hunt D)."""

from __future__ import annotations

from qconsole.backends import backend_class


def _option(kind: str, name: str):
    return next(o for o in backend_class(kind).publish_options if o.name == name)


def test_problems_name_the_option_as_the_operator_reads_it():
    assert _option("ddmq", "requeue_limit").check(-1) == "requeue limit must not be negative (got -1)"
    assert _option("vsqs", "vsqs_clock").check("ns") == "vsqs clock must be one of us, ms"
    assert _option("ddmq", "priority").check(10**30) == "priority must be at most 999,999,999,999,999,999 (got 31 digits)"
    assert _option("ddmq", "requeue_limit").check(3) is None
