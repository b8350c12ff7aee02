"""Saving ddmq.yaml: validated, unknown keys kept, written by temp + rename (never through a symlink),
then read back to make sure a concurrent rewrite by ddmq did not undo it.

Why the read-back: ddmq 0.9.14's ``broker.clean(queue)`` ends with
``update_settings_file(queue, {'cleaned': int(time.time())})``, which reads the queue's whole
``ddmq.yaml``, updates ``cleaned``, writes every key to ``ddmq.yaml.intermediate`` and renames
that over ``ddmq.yaml`` (fixed temp name, no fsync, no lock). A save that lands between ddmq's
read and its rename is silently replaced by the old values. A long-running ddmq broker does this
on every publish/consume once 60 s have passed (its cached ``cleaned`` is never refreshed, so the
gate stays open), and the read-to-rename part is much of each cycle: against a client publishing
in a loop, about a third of saves were undone once. :func:`save` therefore waits ``settle`` seconds after its rename,
re-reads the file, and when the keys it wrote (or removed) are back to what they were before,
saves again -- merged into what is on disk *then*, so ddmq's own ``cleaned`` update is kept --
up to ``attempts`` times before giving up with one clear line.
"""

from __future__ import annotations

import os
import random
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .settings import SettingsError, config_path, load_config, validate
from ..fs.claims import CFG, new_token, owned_name
from ..fs import safety

#: keys ddmq rewrites by itself (clean() stores when it last cleaned a queue); never compared on read-back
DDMQ_MAINTAINED = frozenset({"cleaned"})
#: seconds to wait after the rename before reading the file back (a ddmq rewrite in flight lands by then)
SETTLE_S = 0.2
#: saves tried before a change that keeps being reverted is reported as lost. A client publishing
#: in a tight loop rewrites the file about every millisecond and spends a good part of each cycle
#: between its read and its rename, so a save can be reverted several times in a row.
ATTEMPTS = 5

_ABSENT = object()


class LostUpdateError(SettingsError):
    """The saved keys were reverted by a concurrent rewrite every time they were saved."""

    def __init__(self, attempts: int, message: str) -> None:
        super().__init__(message)
        self.attempts = attempts


@dataclass(frozen=True)
class Saved:
    """What :func:`save` wrote: the file's new content, and how many writes it took."""

    path: str
    written: dict[str, Any]
    attempts: int
    changed: bool  # False when the file already said so and was left untouched


def check_request(values: dict[str, Any], unset: Iterable[str] | None = None) -> list[str]:
    """Validate a save before anything is touched; returns the keys to remove (deduplicated)."""
    bad_keys = [k for k in values if not isinstance(k, str) or not k.strip()]
    if bad_keys:
        raise SettingsError(f"bad setting name {bad_keys[0]!r}")
    removing: list[str] = []
    for k in unset or ():
        if not isinstance(k, str) or not k.strip():
            raise SettingsError(f"bad setting name {k!r}")
        if k not in removing:
            removing.append(k)
    both = [k for k in removing if k in values]
    if both:
        raise SettingsError(f"{both[0]}: both set and unset in one save; choose one")
    problems = validate(values)
    if problems:
        raise SettingsError(problems[0])
    return removing


def _settle(delay: float) -> None:
    """The pause between the rename and the read-back (a seam: tests act here as ddmq would)."""
    if delay > 0:
        time.sleep(delay)


def _backoff(settle: float) -> None:
    """A random pause before saving again, so retries do not keep landing at the same point of a
    client's read-modify-write cycle."""
    delay = random.uniform(0, settle / 4)
    if delay > 0:
        time.sleep(delay)


def _write(root: str, path: str, content: dict[str, Any]) -> None:
    import yaml

    with safety.Confined(root) as c:
        st = c.lstat(path)
        mode = stat.S_IMODE(st.st_mode) if st is not None and stat.S_ISREG(st.st_mode) else None
        # an empty mapping is written as "{}": ddmq's get_settings crashes on an empty queue file
        text = yaml.safe_dump(content, default_flow_style=False, sort_keys=False)
        c.replace_file(path, text.encode(), owned_name(CFG, new_token()), mode=mode)


def _wanted(key: str, values: dict[str, Any]) -> Any:
    """What ``key`` should be after the save (``_ABSENT`` for a removed key)."""
    return values[key] if key in values else _ABSENT


def _same(a: Any, b: Any) -> bool:
    if a is _ABSENT or b is _ABSENT:
        return a is b
    if type(a) is not type(b):  # True is not 1 here: ddmq tells them apart
        return False
    return a == b or (isinstance(a, float) and a != a and b != b)  # a NaN read back is the NaN written


def save(root: str, queue: str | None, values: dict[str, Any], *, unset: Iterable[str] | None = None,
         settle: float = SETTLE_S, attempts: int = ATTEMPTS) -> Saved:
    """Set ``values`` and remove ``unset`` keys in the file, atomically; verify it stuck.

    Raises :class:`LostUpdateError` when every one of ``attempts`` saves was reverted, and
    :class:`SettingsError` when a saved key was changed to a *third* value meanwhile (another
    writer's deliberate change, which is not overwritten).
    """
    removing = check_request(values, unset)
    if not values and not removing:
        raise SettingsError("nothing to set or unset")
    if attempts < 1:
        raise SettingsError("attempts must be at least 1")
    path = config_path(root, queue)
    ours = [k for k in list(values) + removing if k not in DDMQ_MAINTAINED]
    seen_before: dict[str, list[Any]] = {k: [] for k in ours}  # values each key had before one of our writes
    for attempt in range(1, attempts + 1):
        current = load_config(path, link_is_empty=True)  # re-based on what is there now: ddmq's `cleaned` is kept
        merged = {k: v for k, v in current.items() if k not in removing}
        merged.update(values)
        if all(_same(current.get(k, _ABSENT), _wanted(k, values)) for k in list(values) + removing):
            return Saved(path, current, attempt, changed=attempt > 1)  # already so: no write, nothing to lose
        for k in ours:
            seen_before[k].append(current.get(k, _ABSENT))
        _write(root, path, merged)
        _settle(settle)
        after = load_config(path)
        lost = [k for k in ours if not _same(after.get(k, _ABSENT), _wanted(k, values))]
        if not lost:
            return Saved(path, merged, attempt, changed=True)
        foreign = [k for k in lost if not any(_same(after.get(k, _ABSENT), old) for old in seen_before[k])]
        if foreign:
            k = foreign[0]
            now = after.get(k, _ABSENT)
            said = "removed" if now is _ABSENT else f"set to {now!r}"
            raise SettingsError(f"{path}: {k} was {said} by another writer while saving; "
                                "left as they wrote it (check and save again)")
        if attempt < attempts:
            _backoff(settle)
    raise LostUpdateError(attempts,
        f"{path}: {', '.join(lost)} reverted by a concurrent rewrite of the file (ddmq's clean?) "
        f"after each of {attempts} saves; the file keeps the old value{'s' if len(lost) > 1 else ''}")
