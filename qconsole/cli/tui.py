"""`qconsole open [ROOT]` (what `qconsole ROOT` means) and `qconsole demo`. Textual is imported inside."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Annotated, Any, Optional

import typer

from ..backends import is_redis_target, open_target, same_target
from ..errors import ExitCode, QConsoleError, RootError
from .app import app
from ..fastpath import write_error
from .common import AuditLogOpt, LayoutOpt, ReadOnlyOpt, RootOpt, fail, guarded, pick_root

WarnReady = Annotated[Optional[int], typer.Option("--warn-ready", min=0, help="Highlight queues with this many ready messages (as `check`).", show_default=False)]
CritReady = Annotated[Optional[int], typer.Option("--crit-ready", min=0, help="Highlight as critical at this many ready.", show_default=False)]
WarnAge = Annotated[Optional[float], typer.Option("--warn-age", min=0, help="Highlight when the oldest ready message is this many seconds old.", show_default=False)]
CritAge = Annotated[Optional[float], typer.Option("--crit-age", min=0, help="Critical at this oldest-ready age (s).", show_default=False)]
WarnExpired = Annotated[Optional[int], typer.Option("--warn-expired", min=0, help="Highlight at this many expired messages.", show_default=False)]
CritExpired = Annotated[Optional[int], typer.Option("--crit-expired", min=0, help="Critical at this many expired.", show_default=False)]
PoisonOpt = Annotated[int, typer.Option("--poison-threshold", min=1, help="The dead-letter view lists messages redelivered this many times (as `report`).")]


RootsArg = Annotated[
    Optional[list[str]],
    typer.Argument(help="One or more queue roots or RSMQ targets, shown together: a directory, "
                   "redis://[user@]host[:port][/db][?ns=NAME], rediss://... or unix:///path/redis.sock "
                   "(or --root / $QCONSOLE_ROOT).", show_default=False),
]


def run_console(console: Any) -> None:
    """Run the Textual app; a crash is a non-zero exit and one line after Textual's traceback.

    Textual catches an exception in a handler, prints its traceback once the terminal is back and
    returns from ``run()`` normally: the process exited 0, so ``qconsole ...; echo $?`` or a
    supervisor could not tell a crash from a quit."""
    console.run()
    for line in getattr(console, "exit_lines", ()):  # a change stopped at a safe point: how far it got
        write_error(line)
    error = getattr(console, "_exception", None)  # the first exception Textual kept (it re-raises it under Pilot)
    code = console.return_code
    if error is None and not code:
        return
    what = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}" if error is not None else f"code {code}"
    # (write_error escapes the controls a planted name in the message may hold)
    raise fail(f"the console stopped on an internal error ({what}); the traceback is above", ExitCode.INTERNAL)


def open_targets(roots: list[str] | None, root_opt: str | None, layout: str) -> list[Any]:
    """A backend for every target (ROOT... wins over --root, then $QCONSOLE_ROOT); a target that
    cannot be opened is one line and exit 2, after closing the ones already open."""
    if roots and root_opt and root_opt != os.environ.get("QCONSOLE_ROOT") \
            and not any(same_target(r, root_opt) for r in roots):
        raise QConsoleError(f"roots given as ROOT and as --root {root_opt!r}: give every root as ROOT "
                            "(qconsole ROOT1 ROOT2 ...)")
    targets = list(roots) if roots else [pick_root(None, root_opt)]
    handles: list[Any] = []
    try:
        for target in targets:
            try:
                handles.append(open_target(target, layout))
            except RootError:
                # a Redis server down beside other roots: the session opens on all of them, the
                # root screen says why this one shows no queues and reads it once it answers
                # (alone, it is one line and exit 2, as a mistyped host should be)
                if len(targets) < 2 or not is_redis_target(target):
                    raise
                from ..backends.rsmq.backend import RsmqBackend

                handles.append(RsmqBackend.open(str(target), check=False))
    except BaseException:
        for h in handles:
            h.close()
        raise
    return handles


def _refuse_a_mistyped_command(roots: list[str] | None) -> None:
    """`qconsole stat ROOT` opened `stat` as a root ('root ./stat does not exist') and `qconsole
    purg jobs -r ROOT` said 'roots given as ROOT and as --root': a first word that is no path
    that exists, but close to a command's name, is said to be a mistyped command."""
    if not roots or os.path.exists(roots[0]) or is_redis_target(roots[0]) or "/" in roots[0]:
        return
    import difflib

    from .app import _command_names

    close = difflib.get_close_matches(roots[0], sorted(_command_names() - {"open"}), n=1)
    if close:
        raise QConsoleError(f"no command {roots[0]!r} (did you mean `qconsole {close[0]}`? qconsole -h lists them), "
                            "and no root of that name here")


@app.command("open")
@guarded
def open_(
    roots: RootsArg = None,
    root_opt: RootOpt = None,
    interval: Annotated[float, typer.Option("--interval", "-i", min=0.2, help="Seconds between rescans.")] = 2.0,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
    warn_ready: WarnReady = None,
    crit_ready: CritReady = None,
    warn_age: WarnAge = None,
    crit_age: CritAge = None,
    warn_expired: WarnExpired = None,
    crit_expired: CritExpired = None,
    poison_threshold: PoisonOpt = 3,
) -> None:
    """Open the live console on ROOT... (the default command: `qconsole ROOT`; several targets,
    e.g. `qconsole /shared/queues redis://host`, are shown in one session)."""
    from ..output.nagios import Thresholds

    _refuse_a_mistyped_command(roots)
    handles = open_targets(roots, root_opt, layout)
    # the first counts, taken by forked processes while Textual loads (no thread runs yet)
    first = [h.start_first_count() for h in handles]
    try:
        from qconsole.screens.app import QConsoleApp

        with job_control_restored():
            run_console(QConsoleApp(handles, interval=interval, read_only=read_only, audit_log=audit_log,
                                    thresholds=Thresholds(warn_ready, crit_ready, warn_age, crit_age, warn_expired,
                                                          crit_expired),
                                    poison_threshold=poison_threshold, first_counts=first))
    finally:
        for f in first:
            if f is not None:
                f.close()  # still running if the console quit before its first scan


def _demo_thresholds() -> object:
    from ..output.nagios import Thresholds

    return Thresholds(warn_ready=50, crit_ready=200, warn_age=120, crit_age=600, warn_expired=1, crit_expired=10)


@contextlib.contextmanager
def job_control_restored() -> Iterator[None]:
    """The SIGTSTP/SIGCONT handlers as they were before the app: Textual's driver installs its
    own, which need its event loop, and leaves them. A SIGCONT after the app ended (closing the
    terminal sends one after the SIGHUP) raised "no running event loop" in whatever ran then,
    e.g. the demo's clean-up, which stopped half-way and left its directory."""
    import signal

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            if handler is not None:  # (None: set from C, not ours to put back)
                signal.signal(sig, handler)


@app.command()
@guarded
def demo(
    dir_: Annotated[Optional[str], typer.Option("--dir", help="Build the demo roots here and keep them (default: a temp dir, removed on exit).", show_default=False)] = None,
    screenshots: Annotated[Optional[str], typer.Option("--screenshots", help="Write SVG screenshots of the main screens to this directory and exit.", show_default=False)] = None,
    interval: Annotated[float, typer.Option("--interval", "-i", min=0.2, help="Seconds between rescans.")] = 1.0,
    read_only: ReadOnlyOpt = False,
) -> None:
    """A throw-away live system: VSQS and ddmq queues, and an RSMQ namespace on a private
    redis-server when one is installed, with simulated producers and consumers."""
    if screenshots:
        from qconsole.screens.shots import make_screenshots

        for path in make_screenshots(screenshots):
            typer.echo(path)
        return
    from ..demo import demo_session
    from qconsole.screens.app import QConsoleApp

    with demo_session(dir_) as (roots, sim), job_control_restored():
        run_console(QConsoleApp([open_target(r) for r in roots], interval=interval, read_only=read_only,
                                thresholds=_demo_thresholds(), outside_cpu=sim.cpu_seconds))
