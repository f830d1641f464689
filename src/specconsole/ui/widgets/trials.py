"""The trials table and the details of the selected trial.

Every trial of the session with its status and headline numbers; moving the cursor shows
that trial's details (configuration, per-level numbers, crash cause and log excerpt) in the
box beside it. The table is rebuilt only when its rows change, keeping the cursor on the same
trial.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static

from specconsole.present.columns import BY_ID, CONSOLE_COLUMNS
from specconsole.ui.viewmodels import TrialDetails, TrialRow


class TrialsPane(Horizontal):
    """Table on the left, details of the highlighted trial on the right.

    ``single`` is single-request output tok/s, ``peak`` the best aggregate output tok/s over
    the ladder, ``capacity`` the KV pool (``max_total_num_tokens``), ``accept`` the mean
    accept length.
    """

    class Selected(Message):
        """The highlighted trial changed (the screen answers with its details)."""

        def __init__(self, key: str | None) -> None:
            super().__init__()
            self.key = key

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._rows: tuple[TrialRow, ...] = ()
        self._details: TrialDetails | None = None
        self._details_shown = False
        self._columns: tuple[str, ...] = ()
        self.border_title = "Trials"

    def compose(self) -> ComposeResult:
        table: DataTable[str] = DataTable(id="trials-table", cursor_type="row", zebra_stripes=True)
        yield table
        with VerticalScroll(id="trial-details-box"):
            yield Static("No trials yet.", id="trial-details", markup=False)

    def on_mount(self) -> None:
        self._set_columns(tuple(c.id for c in CONSOLE_COLUMNS))

    def _set_columns(self, ids: tuple[str, ...]) -> None:
        """(Re)build the header (a pool's rows carry a box column)."""
        table = self.table
        table.clear(columns=True)
        for column_id in ids:
            table.add_column(BY_ID[column_id].header, key=column_id)
        self._columns = ids

    @property
    def table(self) -> DataTable[str]:
        return self.query_one("#trials-table", DataTable)

    @property
    def selected_key(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        try:
            row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        except Exception:
            return None
        return row_key.value

    def show_rows(self, rows: tuple[TrialRow, ...]) -> None:
        """Replace the table's rows when they changed; follow the newest trial by default."""
        if rows == self._rows:
            return
        table = self.table
        previous = self.selected_key
        at_end = previous is None or (self._rows and previous == self._rows[-1].key)
        self._rows = rows
        if rows and rows[0].columns != self._columns:
            self._set_columns(rows[0].columns)
        table.clear()
        for row in rows:
            table.add_row(*row.cells, key=row.key)
        if not rows:
            return
        keys = [row.key for row in rows]
        target = len(rows) - 1 if at_end or previous not in keys else keys.index(previous)
        table.move_cursor(row=target, animate=False)
        self.post_message(self.Selected(keys[target]))

    def show_details(self, details: TrialDetails | None) -> None:
        if self._details_shown and details == self._details:
            return
        self._details, self._details_shown = details, True
        box = self.query_one("#trial-details", Static)
        if details is None:
            box.update("No trials yet.")
            return
        lines = [details.title, *details.lines]
        if details.log_excerpt:
            lines.append("")
            lines.append("log excerpt:")
            lines.extend(f"  {line}" for line in details.log_excerpt)
        box.update("\n".join(lines))

    @on(DataTable.RowHighlighted, "#trials-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.Selected(event.row_key.value))
