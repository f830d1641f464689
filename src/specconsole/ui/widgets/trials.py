"""The trials table and the details of the selected trial.

Every trial of the session with its status and headline numbers; moving the cursor (``↑``
``↓``, or ``k`` ``j``) shows that trial's details (configuration, per-level numbers, crash
cause and log excerpt) in the box beside it. The table shows whole columns only: when they
do not all fit its width, the lowest-priority ones are left out and the header says
``+N cols →`` (``present.columns.fit_columns``); ``←``/``→`` bring them in. A number is
shown whole or not at all. The table is rebuilt only when its rows or its width change,
keeping the cursor on the same trial.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import Resize
from textual.message import Message
from textual.widgets import DataTable, Static

from specconsole.present.columns import BY_ID, CONSOLE_COLUMNS, ColumnFit, fit_columns, pager_marker
from specconsole.present.wrapping import wrap_lines

if TYPE_CHECKING:
    from specconsole.ui.viewmodels import LevelsView, TrialDetails, TrialRow

PADDING = 2
"""Cells DataTable adds to every column (one each side)."""
SCROLLBAR = 2
"""Cells kept free for the vertical scrollbar (when the rows need one)."""
MARKER_KEY = "more-columns"
LEVELS_SHARE = 0.75
"""The per-level box's most of the pane's height (the stylesheet's ``max-height``)."""
LABEL_MIN = 20
"""When columns must go, the trial's label is cut to this width first (``…``): a name can
be read shortened, a number cannot."""


class TrialsTable(DataTable[str]):
    """The table, with vim-style movement and column shifting."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "down", show=False),
        Binding("k", "cursor_up", "up", show=False),
        Binding("left,h", "shift(-1)", "earlier columns", show=False),
        Binding("right,l", "shift(1)", "more columns", show=False),
    ]

    class Shift(Message):
        """Show other columns (``→``: those cut at this width)."""

        def __init__(self, delta: int) -> None:
            super().__init__()
            self.delta = delta

    class Resized(Message):
        """The table's width changed: the columns that fit may have."""

    def action_shift(self, delta: int) -> None:
        self.post_message(self.Shift(delta))

    def on_resize(self, event: Resize) -> None:
        self.post_message(self.Resized())


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
        self._wrapped_at = 0
        """The width the details were wrapped for."""
        self.details_text = ""
        """The details shown, one line a fact, before they are wrapped to the pane's width."""
        self._ids: tuple[str, ...] = tuple(c.id for c in CONSOLE_COLUMNS)
        self._offset = 0
        self._drawn: tuple[object, ...] = ()
        self._drawn_rows: tuple[TrialRow, ...] = ()
        """The rows the table shows now (the cursor follows the newest while it is on it)."""
        self._drawn_fit = ColumnFit(shown=(), hidden=0)
        """The columns the table shows now and the pager's (clamped) position."""
        self._label_width: int | None = None
        """The label column's cut width (None: whole)."""
        self.border_title = "Trials"
        self._levels: LevelsView | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="trials-left"):
            yield TrialsTable(id="trials-table", cursor_type="row", zebra_stripes=True)
            yield Static("", id="levels-box", markup=False)
        with VerticalScroll(id="trial-details-box"):
            yield Static("No trials yet.", id="trial-details", markup=False)

    def on_mount(self) -> None:
        self._draw(force=True)

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

    @property
    def shown_columns(self) -> tuple[str, ...]:
        """The column ids on screen now, in order (tests)."""
        return tuple(str(c.key.value) for c in self.table.ordered_columns)

    def _content_widths(self) -> list[int]:
        """Each column's width from its header and every row's cell (the data decides, not
        whichever rows were measured when)."""
        columns = [BY_ID[i] for i in self._ids]
        return [
            max([len(c.header), *(len(r.cells[n]) for r in self._rows if n < len(r.cells))])
            for n, c in enumerate(columns)
        ]

    def _fit(self) -> tuple[ColumnFit, int | None]:
        """Whole columns for the table's width (all of them before it has one), and the
        label's cut width when cutting it lets more numbers show."""
        table = self.table
        scrollbar = SCROLLBAR if len(self._rows) + 1 > table.size.height else 0
        width = table.size.width - scrollbar
        columns = [BY_ID[i] for i in self._ids]
        if width <= 0:
            return ColumnFit(shown=tuple(range(len(columns))), hidden=0), None
        widths = [w + PADDING for w in self._content_widths()]
        marker = len(pager_marker(len(columns), len(columns))) + PADDING
        fit = fit_columns(columns, widths, width, offset=self._offset, marker=marker)
        label = self._ids.index("label") if "label" in self._ids else None
        if not fit.hidden or label is None or widths[label] <= LABEL_MIN + PADDING:
            return fit, None
        widths[label] = LABEL_MIN + PADDING
        cut = fit_columns(columns, widths, width, offset=self._offset, marker=marker)
        return (cut, LABEL_MIN) if cut.hidden < fit.hidden else (fit, None)

    def _cell(self, row: TrialRow, n: int, label_width: int | None) -> str:
        text = row.cells[n]
        if label_width is not None and self._ids[n] == "label" and len(text) > label_width:
            return text[: label_width - 1] + "…"
        return text

    def _draw(self, *, force: bool = False) -> None:
        """(Re)build the table when its rows or the columns that fit changed."""
        fit, label_width = self._fit()
        self._drawn_fit = fit
        key = (self._rows, fit, label_width)
        if not force and key == self._drawn:
            return
        self._drawn = key
        table = self.table
        previous = self.selected_key
        # following the newest trial: the cursor was on the last row drawn (or nowhere)
        last = self._drawn_rows[-1].key if self._drawn_rows else None
        at_end = previous is None or previous == last
        self._drawn_rows = self._rows
        table.clear(columns=True)
        widths = self._content_widths()
        for n in fit.shown:  # fixed widths: DataTable never re-measures a column mid-run
            column = BY_ID[self._ids[n]]
            cut = label_width if column.id == "label" and label_width is not None else None
            table.add_column(column.header, key=column.id, width=cut or widths[n])
        if fit.hidden:
            table.add_column(fit.marker, key=MARKER_KEY, width=len(fit.marker))
        for row in self._rows:
            cells = [self._cell(row, n, label_width) for n in fit.shown]
            cells += [""] if fit.hidden else []
            table.add_row(*cells, key=row.key)
        if not self._rows:
            return
        keys = [row.key for row in self._rows]
        target = len(keys) - 1 if at_end or previous not in keys else keys.index(previous)
        table.move_cursor(row=target, animate=False)
        if keys[target] != previous:
            self.post_message(self.Selected(keys[target]))

    def show_rows(self, rows: tuple[TrialRow, ...]) -> None:
        """Replace the table's rows when they changed; follow the newest trial by default."""
        if rows == self._rows:
            return
        self._rows = rows
        if rows:
            self._ids = rows[0].columns
        self._draw()

    @on(TrialsTable.Resized)
    def _resized(self, event: TrialsTable.Resized) -> None:
        event.stop()
        self._draw_levels()
        self._draw()
        self.show_details(self._details)  # wrapped again for its new width

    @on(TrialsTable.Shift)
    def _shift(self, event: TrialsTable.Shift) -> None:
        event.stop()
        self._offset = max(0, self._offset + event.delta)
        self._draw()
        self._offset = self._drawn_fit.offset  # the pager stops at its ends

    def show_levels(self, view: LevelsView | None) -> None:
        """The per-level box under the table: shown when the session asks a per-level
        question (a schedule plan, a baseline), hidden otherwise."""
        if view == self._levels:
            return
        self._levels = view
        box = self.query_one("#levels-box", Static)
        box.set_class(view is not None, "-shown")
        box.border_title = "per level · aggregate tok/s"
        self._draw_levels()

    def _draw_levels(self) -> None:
        """The per-level box at its width: whole columns, sentences wrapped (resizes too)."""
        view = self._levels
        if view is None:
            return
        box = self.query_one("#levels-box", Static)
        width = box.content_size.width or max(20, self.size.width // 2)
        room = self.query_one("#trials-left").content_size.height
        height = int(room * LEVELS_SHARE) - 1 if room else None  # its top border
        box.update(view.text(width, height))

    def show_details(self, details: TrialDetails | None) -> None:
        box = self.query_one("#trial-details", Static)
        width = self._details_width()
        if self._details_shown and (details, width) == (self._details, self._wrapped_at):
            return
        self._details, self._details_shown, self._wrapped_at = details, True, width
        if details is None:
            box.update("No trials yet.")
            return
        lines = [details.title, *details.lines]
        if details.log_excerpt:
            lines.append("")
            lines.append("log excerpt:")
            lines.extend(f"  {line}" for line in details.log_excerpt)
        self.details_text = "\n".join(lines)
        # wrapped here, at spaces and seams, so no figure or name is folded mid-token
        box.update("\n".join(wrap_lines(lines, width)))

    def _details_width(self) -> int:
        """The details' text width now (0 before layout: left unwrapped until then)."""
        scroll = self.query_one("#trial-details-box", VerticalScroll)
        # the room inside the padding, less a vertical scrollbar's cells (shown or to come)
        room = scroll.content_region.width - scroll.styles.scrollbar_size_vertical
        return max(0, room)

    @on(DataTable.RowHighlighted, "#trials-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.post_message(self.Selected(event.row_key.value))
