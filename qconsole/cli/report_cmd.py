"""``qconsole report``: whole-root analysis on Spark. PySpark is imported only when it runs."""

from __future__ import annotations

import os
import sys
import time
from typing import Annotated, Any, Optional

import typer

from ..backends import open_target
from ..errors import QConsoleError
from .app import app
from .common import AuditLogOpt, LayoutOpt, ReadOnlyOpt, RootArg, RootOpt, guarded, pick_root


def _progress_console() -> Any:
    """A Rich console on a duplicate of the terminal's stderr: it keeps showing progress while
    fd 2 is pointed at /dev/null to silence the JVM's start-up."""
    from rich.console import Console

    stream: Any = sys.stderr
    try:
        if sys.stderr.isatty():
            stream = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1)
    except (OSError, ValueError, AttributeError):
        stream = sys.stderr
    return Console(file=stream, highlight=False)


@app.command()
@guarded
def report(
    root: RootArg = None,
    root_opt: RootOpt = None,
    out: Annotated[str, typer.Option("--out", "-o", help="Output directory: messages/ and trends/ Parquet, summary.json.")] = "qconsole-report",
    master: Annotated[str, typer.Option("--master", envvar="SPARK_MASTER", help="Spark master URL: local[*], spark://host:7077, yarn, k8s://... (or $SPARK_MASTER).")] = "local[*]",
    history: Annotated[Optional[list[str]], typer.Option("--history", help="JSON lines from `qconsole stats --json --watch N >> FILE` (repeatable): hourly backlog trends.")] = None,
    poison_threshold: Annotated[int, typer.Option("--poison-threshold", min=1, help="A message requeued this many times (ddmq requeue_counter; RSMQ: received this many times, rc) is a poison candidate.")] = 3,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Let Spark's own log lines through.")] = False,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Analyse a whole root on Spark: per-message inventory (Parquet), per-queue summary (JSON + terminal)."""
    from ..report import render

    from ..report import outputs

    target = pick_root(root, root_opt)
    handle = open_target(target, layout)
    # never into the queue root (a queue named messages/trends would be replaced)
    out = outputs.check_out(out, handle.path if handle.kind in ("vsqs", "ddmq") else None)
    names, root_errors = handle.queue_names()
    history_files = [os.path.abspath(h) for h in history or ()]
    for path in history_files:  # fail before the slow start-up
        if not os.path.isfile(path):
            raise FileNotFoundError(2, "no such history file", path)

    from ..report import spark_job  # imports PySpark: only here, on the run path

    spark_job.check_master(master)

    try:
        _run(handle, str(target), names, root_errors, out, master, history_files, poison_threshold, verbose, spark_job, render)
    except QConsoleError:
        raise
    except Exception as err:
        # Spark's failures (bad master URL, unreachable cluster, a node without pyarrow) come as
        # Java stack traces: one line, and --verbose for the whole story
        if verbose or not type(err).__module__.startswith(("pyspark", "py4j")):
            raise
        first = next((ln.strip() for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
        raise QConsoleError(f"Spark failed: {first[:300]} (run with --verbose for Spark's log)") from None


def _run(handle: Any, target: str, names: list[str], root_errors: list[str], out: str, master: str, history_files: list[str],
         poison_threshold: int, verbose: bool, spark_job: Any, render: Any) -> None:
    from rich.console import Console

    from ..report import inventory, spool

    location = inventory.location_of(handle.kind, target, handle)
    now = handle.now()  # the store's clock: Redis TIME for RSMQ, as `stats` judges states
    console = _progress_console()
    with render.JobProgress(console) as progress:
        progress.phase(f"starting Spark ({master})")
        started = time.monotonic()
        listing = None
        if spark_job.is_local(master) and handle.kind in spool.STORES:
            # list in a helper process while the JVM starts (the machine's cores are the executors)
            listing = spool.SpoolListing(handle.kind, location, names, now, os.path.abspath(out))
        try:
            spark, created = spark_job.start_session(master, verbose=verbose)
        except BaseException:
            if listing is not None:
                listing.cleanup()
            raise
        progress.line(f"session: Spark {spark.version} on {spark.sparkContext.master} · {time.monotonic() - started:.1f}s")
        try:
            progress.watch(spark.sparkContext)
            if not spark_job.is_local(spark.sparkContext.master):
                spark_job.ship_package(spark)
            doc = spark_job.run_report(
                spark, root=handle.path, layout=handle.kind, queues=names, root_errors=root_errors,
                out_dir=os.path.abspath(out), now=now, location=location, threshold=poison_threshold,
                history_files=history_files, progress=progress, listing=listing,
            )
        finally:
            if listing is not None:
                listing.cleanup()
            if created:
                progress.phase("stopping Spark")
                spark.stop()
    Console(highlight=False, soft_wrap=False).print(render.summary_renderable(doc))
    sys.stdout.write(f"summary: {os.path.join(os.path.abspath(out), 'summary.json')}\n")
