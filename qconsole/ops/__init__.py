"""Layer 2: operations that are safe on a live queue (publish, requeue, delete, purge, move,
settings, create, trash, recover), each refused in read-only mode and written to the audit log."""

from __future__ import annotations

from .operations import Operations, create_queue_in, parse_duration
from .result import OperationError, OpResult, ReadOnlyError, TrashBatch

__all__ = ["Operations", "OpResult", "ReadOnlyError", "OperationError", "TrashBatch", "parse_duration", "create_queue_in"]
