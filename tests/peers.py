"""The reference clients as test peers: vsqs 0.3 and ddmq 0.9.14, used as their users use them.

ddmq 0.9.14 calls ``yaml.load(fh)`` without a Loader, which PyYAML 6 rejects; the one shim
(DESIGN.md §1) makes ``yaml.load`` default to SafeLoader before ddmq is imported.
Nothing else is patched.
"""

from __future__ import annotations

from typing import Any


def ddmq_module() -> Any:
    import yaml

    if not getattr(yaml.load, "_qconsole_shim", False):
        original = yaml.load

        def load(stream: Any, Loader: Any = None) -> Any:  # noqa: N803 (PyYAML's name)
            return original(stream, Loader=Loader or yaml.SafeLoader)

        load._qconsole_shim = True  # type: ignore[attr-defined]
        yaml.load = load
    import ddmq

    return ddmq


def ddmq_broker(root: str, *queues: str) -> Any:
    """A real ddmq broker on ``root`` (created), with ``queues`` created by ddmq itself."""
    b = ddmq_module().broker(str(root), create=True)
    for q in queues:
        b.create_queue(q)
    return b


def vsqs_manager(root: str) -> Any:
    """A real vsqs QueueManager; call ``.close()`` when done (it runs a watchdog thread)."""
    from vsqs.queue import QueueManager

    return QueueManager(str(root))
