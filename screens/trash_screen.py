"""The trash of a root: each batch a delete or purge made, what it holds, and restore."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from qconsole.backends.base import Backend
from qconsole.errors import QConsoleError
from qconsole.output import humanize
from qconsole.safetext import safe_name

from .dialogs import ConfirmScreen
from .names import one_row_title, short_name
from .services import services

#: ids named per batch in the "holds" column, cut to its width (the table never scrolls sideways)
SHOWN_IDS = 2
HOLDS_W = 24
#: cells of the queue column: a longer name keeps its head and tail around …
QUEUE_W = 12
#: cells of the count column: a larger count is shortened (100k, 1.23M), never cut (a purge of
#: 100,050 messages read "10005")
COUNT_W = 5


class BatchTable(DataTable):  # type: ignore[type-arg]
    """The batches: on an empty trash the table's own enter (select a row) gives way to the
    screen's, which says there is nothing to restore (it did nothing at all)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "select_cursor" and not self.row_count:
            return False
        return super().check_action(action, parameters)


class TrashScreen(Screen[None]):
    """Newest batch first; enter restores the batch under the cursor (after asking)."""

    MUTATING = frozenset({"restore"})
    BINDINGS = [
        Binding("r,enter", "restore", "Restore", id="trash.restore"),
        Binding("g", "reload", "Reload", id="trash.reload"),
        Binding("escape,q", "back", "Back", id="trash.back"),
        Binding("j", "cursor(1)", "Down", show=False, id="trash.down"),
        Binding("k", "cursor(-1)", "Up", show=False, id="trash.up"),
    ]

    class Listed(TMessage):
        def __init__(self, batches: list, error: str | None) -> None:  # noqa: ANN001
            super().__init__()
            self.batches = batches
            self.error = error

    def __init__(self, root: Backend) -> None:
        super().__init__()
        self.qroot = root
        self.batches: list = []
        self.last_batch: object | None = None  # tests and screenshots wait for the first listing

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.title_text(), id="ttitle")
        table: DataTable[Text | str] = BatchTable(cursor_type="row", id="batches")
        for key, label, width in (("when", "when", 19), ("action", "action", 6), ("queue", "queue", QUEUE_W),
                                  ("count", "msgs", COUNT_W), ("holds", "holds", HOLDS_W)):
            table.add_column(label, key=key, width=width)
        yield table
        yield Static(Text("listing…", style="dim"), id="tstatus")
        yield Footer(compact=True)

    def title_text(self) -> Text:
        """One row: a root's long path shortened around … (it wrapped away, "trash of" alone)."""
        return one_row_title(Text("trash of ", style="dim"), self.qroot.target, Text(""), (self.size.width or 80) - 2)

    def on_resize(self) -> None:
        self.query_one("#ttitle", Static).update(self.title_text())

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self._list_worker()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "restore" and services(self).read_only:
            return False
        return True

    @work(thread=True, exclusive=True, exit_on_error=False, group="trash")
    def _list_worker(self) -> None:
        try:
            batches = services(self).operations(self.qroot).trash_list()
            self.post_message(self.Listed(batches, None))
        except (QConsoleError, OSError) as err:
            self.post_message(self.Listed([], str(err) if isinstance(err, QConsoleError) else err.strerror))

    def on_trash_screen_listed(self, event: Listed) -> None:
        self.last_batch = event
        table = self.query_one(DataTable)
        table.clear()
        self.batches = sorted(event.batches, key=lambda b: b.created_at, reverse=True)
        # a file trash holds file names: ddmq's (`999.17957668228540032.ddmq7ec7…`) are shown
        # as the ids the queue screen and the delete question named (the names' common head
        # filled the column: one message, unrecognisable)
        message_id = getattr(self.qroot, "message_id", None)
        for b in self.batches:
            held = ", ".join(safe_name((message_id(i) if message_id else None) or i) for i in b.ids[:SHOWN_IDS])
            # the others of the batch, not of the ids listed with it: an RSMQ batch lists its
            # first 8, and a purge of 10,715 messages read "hojnw00cnzyGbXpDMz2u… +6"
            rest = max(b.count or 0, len(b.ids)) - min(len(b.ids), SHOWN_IDS)
            more = f" +{rest}" if rest > 0 else ""
            if len(held) + len(more) > HOLDS_W:
                held = held[: HOLDS_W - len(more) - 1] + "…"
            held += more
            # Text cells: a plain str cell is parsed as markup by the table (`x[/]y` crashed it,
            # `[reverse]` styled the row); the store's names are shown as they are, escaped
            table.add_row(Text(humanize.clock(b.created_at)), Text(safe_name(str(b.action))),
                          Text(short_name(b.queue or "-", QUEUE_W)), Text(humanize.fit(b.count, COUNT_W), justify="right"),
                          Text(held), key=b.batch)
        status = self.query_one("#tstatus", Static)
        if event.error:
            status.update(Text(safe_name(event.error), style="red"))
        elif not self.batches:
            status.update(Text("the trash is empty", style="dim"))
        else:
            status.update(Text(f"{len(self.batches)} batch(es) · enter restores the highlighted batch "
                               "into its queue", style="dim"))

    def action_cursor(self, step: int) -> None:
        table = self.query_one(DataTable)
        table.move_cursor(row=max(0, table.cursor_row + step))

    def action_reload(self) -> None:
        self._list_worker()

    def action_back(self) -> None:
        self.app.pop_screen()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_restore()

    def action_restore(self) -> None:
        app = services(self)
        if app.refuse_if_read_only("restore"):
            return
        if not self.batches:  # the footer offers r: said, not silence
            listed = self.last_batch
            why = ("the trash is still being listed" if listed is None else
                   "the trash could not be listed" if getattr(listed, "error", None) else "the trash is empty")
            app.say(f"nothing to restore: {why}", "warning")
            return
        table = self.query_one(DataTable)
        batch = self.batches[min(table.cursor_row, len(self.batches) - 1)]

        def restored(result: object) -> None:
            if result is not None:
                app.forget_undo(self.qroot, batch.batch)
            self._list_worker()

        def answered(yes: bool | None) -> None:
            if yes:
                app.run_operation(self.qroot, "restore", lambda ops: ops.trash_restore(batch.batch), restored)

        self.app.push_screen(ConfirmScreen(
            f"Restore {batch.count} message(s) into {safe_name(batch.queue or '?')}?",
            f"Batch {safe_name(batch.batch)} ({batch.action} at {humanize.clock(batch.created_at)})."), answered)
