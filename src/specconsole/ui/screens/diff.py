"""The diff pane (``v``): what each deploy changed, or is changing, on the box.

Every deploy's unified diff of the unit (or command line, or ``docker run``) against what
was on the box is kept in the trial's record (values of environment variables redacted).
This screen shows the deploy in progress (or, before the session's first, the preview of
it: what ``s`` or ``d`` would change) and every recorded trial's diff, starting at the trial
selected in the trials table; ``←``/``→`` step through them. It only renders entries
built by ``present.deploys.diffs`` from the state: it changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from specconsole.ui.widgets.diffview import DiffView

if TYPE_CHECKING:
    from specconsole.present.deploys.diffs import DiffEntry

EMPTY = "No deploy yet: a diff appears here as soon as a trial deploys (d or s)."


class DiffScreen(ModalScreen[None]):
    """One diff at a time, with the others a key away."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,v,q", "close", "close", show=False),
        Binding("left,p", "step(-1)", "newer", show=False),
        Binding("right,n", "step(1)", "older", show=False),
    ]

    def __init__(self, entries: list[DiffEntry], selected: str | None = None) -> None:
        super().__init__()
        self._entries = entries
        keys = [e.key for e in entries]
        self._index = keys.index(selected) if selected in keys else 0

    def compose(self) -> ComposeResult:
        with Vertical(id="diff-box") as box:
            box.border_subtitle = "← → other trials · esc closes"
            yield Static("", id="diff-title", markup=False)
            with VerticalScroll(id="diff-scroll"):
                yield DiffView(id="diff-view")

    def on_mount(self) -> None:
        self._show()

    @property
    def entry(self) -> DiffEntry | None:
        """The entry shown now (None when there is no diff at all)."""
        return self._entries[self._index] if self._entries else None

    def _show(self) -> None:
        box = self.query_one("#diff-box")
        title = self.query_one("#diff-title", Static)
        view = self.query_one(DiffView)
        entry = self.entry
        if entry is None:
            box.border_title = "Diff"
            title.update(EMPTY)
            view.display = False
            return
        box.border_title = f"Diff {self._index + 1}/{len(self._entries)}"
        title.update(entry.title)
        view.show(entry.diff)

    def action_step(self, delta: int) -> None:
        if self._entries:
            self._index = (self._index + delta) % len(self._entries)
            self._show()

    def action_close(self) -> None:
        self.dismiss(None)
