"""Which messages a list of ids names (``Operations._pick``, behind delete/requeue/move by id):
the C-level index and picking give exactly what a plain loop over the scan gives, on random
scans where ids, relpaths and names collide, with repeats, unknown ids and ids that are not
strings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qconsole.backends.base import find_message
from qconsole.errors import MessageNotFoundError
from qconsole.model import Message, QueueScan
from qconsole.ops.operations import Operations
from qconsole.ops.result import NOT_IN_QUEUE, OperationError

TOKENS = ["1", "2", "12", "a", "b", "work/a", "work/1", "1.5", "x/1"]


def reference_pick(scan: QueueScan, ids: list, missing: str) -> tuple[list[Message], list[tuple[str, str]]]:
    """Each id looked up as find_message does (the first message in scan order whose id,
    relpath or name it is); an unknown one fails the pick or is skipped; each message once,
    the first found for its id, in the order first asked for."""
    found = []
    for ident in ids:
        try:
            found.append(find_message(scan, ident) if isinstance(ident, str) else None)
        except MessageNotFoundError:
            found.append(None)
    for ident, msg in zip(ids, found):
        if msg is None and (missing == "fail" or not isinstance(ident, str)):
            find_message(scan, ident)  # raises, for the first such id
    firsts: dict[str, Message] = {}
    for msg in found:
        if msg is not None:
            firsts.setdefault(msg.id, msg)
    unknown = dict.fromkeys(ident for ident, msg in zip(ids, found) if msg is None)
    return list(firsts.values()), [(ident, NOT_IN_QUEUE) for ident in unknown]


message = st.builds(
    lambda mid, rel, state: Message("q", "vsqs", mid, state, rel),
    st.sampled_from(TOKENS), st.sampled_from(TOKENS), st.sampled_from(["ready", "inflight", "expired"]),
)
ident = st.one_of(st.sampled_from(TOKENS + ["zz", "work", ""]), st.integers(0, 3), st.just(["1"]), st.none())


def _outcome(fn, *args):
    try:
        msgs, skipped = fn(*args)
    except (MessageNotFoundError, TypeError) as err:  # (an int's error message fails to be made: TypeError)
        return "raised", type(err).__name__, str(err)
    return [id(m) for m in msgs], skipped  # the very message objects, in order


@settings(max_examples=600, deadline=None)
@given(st.lists(message, max_size=12), st.lists(ident, max_size=15), st.sampled_from(["fail", "skip"]))
def test_pick_equals_the_plain_loop(messages, ids, missing):
    scan = QueueScan("q", "vsqs", 0.0, messages=messages)
    ops = Operations.__new__(Operations)  # _pick reads only its arguments
    assert _outcome(ops._pick, scan, ids, missing) == _outcome(reference_pick, scan, ids, missing)


def test_pick_refuses_an_unknown_missing_mode():
    ops = Operations.__new__(Operations)
    with pytest.raises(OperationError):
        ops._pick(QueueScan("q", "vsqs", 0.0, messages=[]), ["1"], "ignore")


def test_pick_keeps_the_first_message_of_an_id_held_twice_and_the_order_asked():
    a1, b, a2 = (Message("q", "vsqs", "a", "ready", "a"), Message("q", "vsqs", "b", "ready", "b"),
                 Message("q", "vsqs", "a", "expired", "a.99"))
    scan = QueueScan("q", "vsqs", 0.0, messages=[a1, b, a2])
    ops = Operations.__new__(Operations)
    msgs, skipped = ops._pick(scan, ["a.99", "b", "a", "nope", "b", "nope"], "skip")
    assert [m is x for m, x in zip(msgs, [a2, b])] == [True, True] and len(msgs) == 2
    assert skipped == [("nope", NOT_IN_QUEUE)]
