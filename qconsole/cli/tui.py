"""`qconsole open [ROOT]` (what `qconsole ROOT` means) and `qconsole demo`. Textual is imported inside."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..backends import open_target
from .app import app
from .common import AuditLogOpt, LayoutOpt, ReadOnlyOpt, RootArg, RootOpt, guarded, pick_root


@app.command("open")
@guarded
def open_(
    root: RootArg = None,
    root_opt: RootOpt = None,
    interval: Annotated[float, typer.Option("--interval", "-i", min=0.2, help="Seconds between rescans.")] = 2.0,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Open the live console on ROOT (the default command: `qconsole ROOT`)."""
    handle = open_target(pick_root(root, root_opt), layout)
    from screens.app import QConsoleApp

    QConsoleApp(handle, interval=interval, read_only=read_only, audit_log=audit_log).run()


@app.command()
@guarded
def demo(
    dir_: Annotated[Optional[str], typer.Option("--dir", help="Build the demo roots here and keep them (default: a temp dir, removed on exit).", show_default=False)] = None,
    screenshots: Annotated[Optional[str], typer.Option("--screenshots", help="Write SVG screenshots of the main screens to this directory and exit.", show_default=False)] = None,
    interval: Annotated[float, typer.Option("--interval", "-i", min=0.2, help="Seconds between rescans.")] = 1.0,
    read_only: ReadOnlyOpt = False,
) -> None:
    """A throw-away live system: VSQS and ddmq queues with simulated producers and consumers."""
    if screenshots:
        from screens.shots import make_screenshots

        for path in make_screenshots(screenshots):
            typer.echo(path)
        return
    from ..demo import demo_session
    from screens.app import QConsoleApp

    with demo_session(dir_) as (roots, _sim):
        QConsoleApp([open_target(r) for r in roots], interval=interval, read_only=read_only).run()
