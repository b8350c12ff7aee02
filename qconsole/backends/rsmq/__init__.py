"""RSMQ (Redis Simple Message Queue): a namespace in Redis as a qconsole backend.

Imported only for a ``redis://``, ``rediss://`` or ``unix://`` target: a file root never
imports this package, nor redis.
"""
