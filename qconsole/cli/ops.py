"""Commands that change a root: publish, requeue, delete, purge, move, config, create,
trash, audit, recover. Each goes through :class:`qconsole.ops.Operations`."""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any, Optional

import typer

from .. import change_commands as changes
from ..errors import ExitCode, QConsoleError
from ..output.jsontext import finite
from ..safetext import escape_controls, safe_name
from ..backends import open_target
from .app import app
from .common import AuditLogOpt, LayoutOpt, QueueArg, ReadOnlyOpt, RootArg, RootOpt, fail, guarded, pick_root

YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
NoTrashOpt = Annotated[bool, typer.Option("--no-trash", help="Really unlink (no undo) instead of moving to the trash.")]
#: the largest payload publish takes (held in memory, count times referenced): far above what
#: any of the clients send (RSMQ: 64 KiB), far below what would exhaust a login node
MAX_PUBLISH_BYTES = 256 << 20
IDS_HELP = ("Message ids (or file names); '-' alone: read them from stdin, one a line (as `qconsole ls QUEUE --ids` "
            "prints them; one no longer in the queue is skipped, a typed one that is not fails the command).")
IdsArg = Annotated[Optional[list[str]], typer.Argument(metavar="[ID]...", help=IDS_HELP, show_default=False)]

# the bodies of requeue/delete/purge/move, and what every changing command here shares, live
# in a typer-free module: the console script runs those commands without typer when it can
_ops = changes.open_ops
_say = changes.say
_report = changes.report
Progress = changes.Progress


#: characters of an unparsable audit line shown (``--json`` gives it whole)
RAW_SHOWN = 200


def _confirm(question: str | None, yes: bool) -> None:
    """Ask ``question`` (None: only check that there is a terminal to ask on)."""
    if yes:
        return
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise fail("refusing without a terminal to confirm: add --yes")
    if question is not None and not typer.confirm(question, default=False):
        raise fail("cancelled", ExitCode.CANCELLED)


def _publish_options(func: Any) -> Any:
    """Add one typer option per publish option any backend declares (flags built from the
    backends, not written here); the command receives them as keyword arguments."""
    import inspect

    from ..backends import all_publish_options

    kinds: dict[str, list[str]] = {}
    decl: dict[str, Any] = {}
    for kind, opt in all_publish_options():
        kinds.setdefault(opt.name, []).append(kind)
        decl.setdefault(opt.name, opt)
    types = {"int": Optional[int], "float": Optional[float], "choice": Optional[str], "bool": Optional[bool],
             "int_or_bool": Optional[bool]}
    sig = inspect.signature(func, eval_str=True)
    params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = next(i for i, p in enumerate(params) if p.name == "root_opt")
    extra = []
    for name, opt in decl.items():
        flags = [f"{opt.flag}/--no-{opt.flag[2:]}"] if opt.kind in ("bool", "int_or_bool") else [opt.flag]
        if opt.short:
            flags.append(opt.short)
        where = "/".join(kinds[name])
        hint = f" One of: {', '.join(opt.choices)}." if opt.choices else ""
        info = typer.Option(*flags, help=f"[{where}] {opt.help}{hint}", show_default=False)
        extra.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                       annotation=Annotated[types[opt.kind], info]))
    func.__signature__ = sig.replace(parameters=params[:at] + extra + params[at:])
    return func


@app.command()
@_publish_options
@guarded
def publish(
    queue: QueueArg,
    text: Annotated[Optional[str], typer.Argument(help="Message text (or use --file / stdin).", show_default=False)] = None,
    file: Annotated[Optional[str], typer.Option("--file", "-F", help="Read the payload from PATH ('-' = stdin).", show_default=False)] = None,
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=10_000_000, help="Publish N copies.")] = 1,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
    **options: Any,
) -> None:
    """Publish test messages by the queue's own protocol (atomic; readable by the queue's group).

    The options marked [vsqs], [ddmq] ... apply to that kind of store only."""
    ops = _ops(root_opt, layout, read_only, audit_log, refuse="publish")
    if text is not None and file is not None:
        raise fail("give TEXT or --file, not both")
    if file == "-" or (text is None and file is None):
        if text is None and file is None and sys.stdin.isatty():
            raise fail("nothing to publish: give TEXT, --file PATH or pipe it on stdin")
        data = sys.stdin.buffer.read(MAX_PUBLISH_BYTES + 1)  # `cat /dev/zero |` ends, with one line
        if len(data) > MAX_PUBLISH_BYTES:
            raise fail(f"more than {MAX_PUBLISH_BYTES >> 20} MiB on stdin: a message that large is refused")
    elif file is not None:
        from ..backends.fs import safety

        # a FIFO or /dev/zero is refused, never read; a file past the cap, before it is read
        data = safety.read_regular(file, follow=True, max_size=MAX_PUBLISH_BYTES)
    else:
        # argv is bytes: what is not UTF-8 arrives as surrogates and goes out as those bytes
        data = (text or "").encode("utf-8", "surrogateescape")
    result = ops.publish(queue, [data] * count, **options)
    _report(ops, result)
    if count <= 20:
        for mid in result.done:
            _say(f"  {mid}")


@app.command()
@guarded
def requeue(
    queue: QueueArg,
    ids: IdsArg = None,
    expired: Annotated[bool, typer.Option("--expired", help="Every expired (past-deadline) message.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Every in-flight and expired message.")] = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Put consumed (in-flight/expired) messages back to ready, as the client's own requeue does."""
    changes.requeue(queue, ids, expired, all_, root_opt, layout, read_only, audit_log)


@app.command()
@guarded
def delete(
    queue: QueueArg,
    ids: Annotated[list[str], typer.Argument(metavar="ID...", help=IDS_HELP, show_default=False)],
    yes: YesOpt = False,
    no_trash: NoTrashOpt = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Delete messages (into the trash unless --no-trash; undo with `qconsole trash restore`)."""
    changes.delete(queue, ids, yes, no_trash, root_opt, layout, read_only, audit_log,
                   confirm=lambda question: _confirm(question, yes))


@app.command()
@guarded
def purge(
    queue: QueueArg,
    state: Annotated[Optional[str], typer.Option("--state", "-s", help="Only ready, inflight or expired messages.", show_default=False)] = None,
    yes: YesOpt = False,
    no_trash: NoTrashOpt = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Remove every message of a queue, or those in --state (into the trash unless --no-trash; undo with `qconsole trash restore`).

    Keeps the directory, ddmq.yaml and work/."""
    changes.purge(queue, state, yes, no_trash, root_opt, layout, read_only, audit_log,
                  confirm=lambda question: _confirm(question, yes))


@app.command()
@guarded
def move(
    src: Annotated[str, typer.Argument(help="Source queue.", show_default=False)],
    dest: Annotated[str, typer.Argument(help="Destination queue (same root).", show_default=False)],
    ids: IdsArg = None,
    all_: Annotated[bool, typer.Option("--all", help="Every message (ready, in flight, expired).")] = False,
    state: Annotated[Optional[str], typer.Option("--state", "-s", help="Every message in this state (ready, inflight, expired, delayed).", show_default=False)] = None,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Redrive messages into another queue: claim, publish into DEST by its protocol, drop the claim."""
    changes.move(src, dest, ids, all_, state, root_opt, layout, read_only, audit_log)


#: the key column of `config`'s listing is at most this wide (ddmq's and rsmq's keys are ~10)
CONFIG_KEY_WIDTH = 24


@app.command()
@guarded
def config(
    queue: Annotated[Optional[str], typer.Argument(help="Queue (omit, or '-', for the root's ddmq.yaml).", show_default=False)] = None,
    assignments: Annotated[Optional[list[str]], typer.Argument(metavar="[KEY[=VALUE]]...", help="Show KEY, or set KEY=VALUE.", show_default=False)] = None,
    unset: Annotated[Optional[list[str]], typer.Option("--unset", metavar="KEY", help="Remove KEY from this ddmq.yaml (it falls back to the root's value, then the default); repeatable.", show_default=False)] = None,
    json_: Annotated[bool, typer.Option("--json", help="Effective settings as JSON.")] = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Show effective ddmq settings with their source (default/root/queue), set KEY=VALUE, or --unset KEY."""
    from ..backends.base import SETTINGS

    args = list(assignments or [])
    if queue is not None and ("=" in queue or queue == "-"):  # `config key=value`: the root's file
        if queue != "-":
            args.insert(0, queue)
        queue = None
    sets = [a for a in args if "=" in a]
    removing = [k.strip() for k in unset or []]
    if (sets or removing) and read_only:
        raise fail("read-only mode: config refused (drop --read-only / unset QCONSOLE_READ_ONLY)")
    if (sets or removing) and len(sets) != len(args):
        shown = next(a for a in args if "=" not in a)
        raise fail(f"cannot show {shown!r} while changing settings: use KEY=VALUE to set, --unset KEY to remove")
    bad = next((k for k in removing if not k or "=" in k), None)
    if bad is not None:
        raise fail(f"bad --unset {bad!r}: give a key name (no value)")
    handle = open_target(pick_root(None, root_opt), layout)
    if not handle.can(SETTINGS):
        raise fail(f"{handle.title} queues have no settings (there is no config file to show or change)")
    if queue is not None:
        handle.require_queue(queue)
    if sets or removing:
        from ..ops import Operations

        values = {}
        for a in sets:
            key, _, raw = a.partition("=")
            key = key.strip()
            if not key:
                raise fail(f"bad assignment {a!r}: use KEY=VALUE")
            values[key] = handle.parse_setting(key, raw)
        ops = Operations(handle, read_only=read_only, audit_log=audit_log)
        _report(ops, ops.save_settings(queue, values, unset=removing))
        return
    eff = handle.settings(queue)
    keys = [a for a in args] or list(eff)
    unknown = [k for k in keys if k not in eff]
    if unknown:
        raise fail(f"no setting {unknown[0]!r} in {'queue ' + queue if queue else 'the root'}")
    if json_:
        doc = {k: {"value": eff[k].value, "source": eff[k].source} for k in keys}
        sys.stdout.write(json.dumps(finite(doc), indent=2, default=str) + "\n")
        return
    # aligned on the usual keys: one long key (a planted one) runs on its own line, not all values off screen
    width = min(max(len(k) for k in keys), CONFIG_KEY_WIDTH)
    for k in keys:
        _say(f"{k:<{width}}  {eff[k].value!s:<12} ({eff[k].source})")


@app.command("delete-queue")
@guarded
def delete_queue(
    queue: QueueArg,
    force: Annotated[bool, typer.Option("--force", help="Also when it still holds messages (they are gone for good).")] = False,
    yes: YesOpt = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Remove an RSMQ queue as rsmq's deleteQueue does (VSQS and ddmq roots: not supported).

    A queue holding messages needs --force (they are gone for good, no trash)."""
    ops = _ops(root_opt, layout, read_only, audit_log, refuse="delete-queue")
    ops.check_delete_queue(queue, force=force)  # what would refuse it, before asking (not after a yes)
    _confirm(f"Delete queue {safe_name(queue)}" + (" and every message in it" if force else "") + "?", yes)
    _report(ops, ops.delete_queue(queue, force=force))


@app.command()
@guarded
def create(
    queue: QueueArg,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Create a queue as the real client does (ddmq: dir, work/ and ddmq.yaml; VSQS: the directory).

    With an explicit --layout, a root that does not exist yet is made too, as the clients'
    own constructors (ddmq.broker(create=True), vsqs QueueManager.get_queue) would."""
    from ..ops import create_queue_in

    if read_only:
        _ops(root_opt, layout, read_only, audit_log, refuse="create")
    ops, result = create_queue_in(pick_root(None, root_opt), layout, queue, audit_log=audit_log)
    _report(ops, result)


@app.command()
@guarded
def recover(
    root: RootArg = None,
    force: Annotated[bool, typer.Option("--force", help="Also take leftovers whose qconsole may still run.")] = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Put back messages a killed qconsole left claimed, and remove its temp files
    (`qconsole recover ROOT`, as `stats ROOT`; or --root)."""
    ops = _ops(pick_root(root, root_opt), layout, read_only, audit_log, refuse="recover")
    rep = ops.recover(force=force)
    _say(f"recover: {len(rep.restored)} put back, {len(rep.completed)} finished moves, "
         f"{len(rep.removed_temp)} temp files removed, {len(rep.live)} left to a running qconsole, "
         f"{len(rep.problems)} problems")
    for line in rep.problems:
        _say(f"  problem: {line}")
    if rep.problems:
        raise typer.Exit(ExitCode.PROBLEMS)


trash_app = typer.Typer(help="Deleted and purged messages: list, restore, empty.", no_args_is_help=True,
                        rich_markup_mode=None)
app.add_typer(trash_app, name="trash")


@trash_app.command("list")
@guarded
def trash_list(
    json_: Annotated[bool, typer.Option("--json", help="As JSON.")] = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Trash batches, newest last."""
    from ..output.humanize import clock

    ops = _ops(root_opt, layout, read_only, audit_log)
    batches = ops.trash_list()
    if json_:
        sys.stdout.write(json.dumps(finite([{"batch": b.batch, "created_at": b.created_at, "action": b.action,
                                             "queue": b.queue, "count": b.count, "user": b.user} for b in batches]),
                                    indent=2) + "\n")
        return
    if not batches:
        try:  # its line names batches a killed purge left hidden, and what makes them restorable
            ops.root.trash_batch_queue(None)
            _say("the trash is empty")
        except QConsoleError as err:
            _say(str(err))
        return
    for b in batches:
        _say(f"{b.batch}  {clock(b.created_at)}  {b.action:<6} {safe_name(b.queue or '-'):<20} {b.count:>7} msg  {b.user}")


@trash_app.command("restore")
@guarded
def trash_restore(
    batch: Annotated[Optional[str], typer.Argument(help="Batch id (default: the newest).", show_default=False)] = None,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Put a batch back; in-flight and expired messages come back ready."""
    changes.trash_restore(batch, root_opt, layout, read_only, audit_log)


@trash_app.command("empty")
@guarded
def trash_empty(
    older_than: Annotated[Optional[str], typer.Option("--older-than", help="Only batches older than D (7d, 12h, 30m).", show_default=False)] = None,
    yes: YesOpt = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """Delete trash batches for good."""
    from ..ops import parse_duration

    ops = _ops(root_opt, layout, read_only, audit_log, refuse="trash empty")
    secs = parse_duration(older_than) if older_than is not None else None  # "" is refused, not "all"
    # the question says what goes for good; with nothing listed to empty, none is asked (a
    # script without a terminal still needs --yes, whatever the trash holds)
    now = time.time()
    picked = [b for b in ops.trash_list() if secs is None or now - b.created_at >= secs]
    older = f" of batches older than {older_than}" if older_than else ""
    _confirm(f"Empty the trash{older}: {len(picked)} batch(es), {sum(b.count for b in picked)} message(s), "
             "gone for good?" if picked else None, yes)
    result = ops.trash_empty(secs)
    _report(ops, result)
    if result.skipped:  # batches left (another qconsole's restore, one that cannot be removed)
        raise typer.Exit(ExitCode.PROBLEMS)


@app.command()
@guarded
def audit(
    tail: Annotated[Optional[int], typer.Option("--tail", "-n", min=1, max=1_000_000_000,
                                                help="Only the last N entries.")] = None,
    json_: Annotated[bool, typer.Option("--json", help="The raw JSON lines.")] = False,
    root_opt: RootOpt = None,
    layout: LayoutOpt = "auto",
    read_only: ReadOnlyOpt = False,
    audit_log: AuditLogOpt = None,
) -> None:
    """The log of every change made through qconsole."""
    from ..ops import audit as audit_mod

    handle = open_target(pick_root(None, root_opt), layout) if not audit_log else None
    path = audit_log or handle.default_audit_log()
    records = audit_mod.read(path, tail, root=getattr(handle, "path", None))
    if json_:
        for r in records:
            sys.stdout.write(json.dumps(finite(r), ensure_ascii=True) + "\n")
        return
    if not records:
        _say(f"no audit entries in {path}")
        return
    for r in records:
        if "raw" in r:
            raw = r["raw"]  # a planted line can be a megabyte: a screenful of it tells nothing more
            _say(f"(unparsable) {raw if len(raw) <= RAW_SHOWN else raw[:RAW_SHOWN] + f'… ({len(raw)} characters)'}")
            continue
        what = _audit_what(r)
        extra = f" -> {r['dest']}" if r.get("dest") else ""
        _say(f"{r.get('time', '?')}  {r.get('user', '?')}@{r.get('host', '?')}  {r.get('action', '?')} "
             f"{r.get('queue') or '-'}{extra}  {what}  {r.get('outcome', '')}"
             + (f": {r['error']}" if r.get("error") else ""))


def _audit_what(r: dict[str, Any]) -> str:
    """What an audit record changed, in a few words: messages, or the settings set and removed."""
    if r.get("action") == "config":
        values = r.get("values") or {}
        parts = [f"{k}={json.dumps(v)}" for k, v in values.items()] if isinstance(values, dict) else []
        parts += [f"unset {k}" for k in r.get("unset") or []]
        return escape_controls(" ".join(parts), keep_newlines=False)
    action, count = r.get("action"), r.get("count")
    if action in ("create", "delete-queue"):  # its count is the queue itself, not a message
        messages = r.get("messages")
        return f"{messages} msg" if isinstance(messages, int) and not isinstance(messages, bool) else ""
    if action == "trash empty":  # its ids are trash batches
        return f"{count} batch(es)" if count is not None else ""
    return f"{count} msg" if count is not None else ""
