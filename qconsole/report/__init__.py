"""``qconsole report``: the Spark pipeline (layer 5).

``inventory`` (store-neutral chunks -> Arrow -> Parquet), ``qconsole.backends.fs.report_chunks`` (the file layouts'
chunk lister and reader), ``summary`` and ``history`` are plain Python (the executors import
the first two; pyarrow only inside functions); only ``spark_job`` imports PySpark, and only
when the command runs.
"""
