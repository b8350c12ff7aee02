"""``qconsole report``: the Spark pipeline (layer 5).

``inventory`` and ``summary`` and ``history`` are plain Python (the executors import
``inventory``); only ``spark_job`` imports PySpark, and only when the command runs.
"""
