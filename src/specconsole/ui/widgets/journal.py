"""The journal pane: the server's live log, bounded, followable, searchable and highlighted.

A loading SGLang server can print thousands of lines a second (NCCL tracebacks from every
rank, CUDA-graph capture progress), so this widget is built to never freeze the UI:

* lines arrive in batches (the bridge flushes about every 100 ms, see ``ui.bridge``) and are
  appended with one ``Log.write_lines`` call;
* ``Log`` renders only the visible lines, and the pane keeps at most ``max_lines`` of them
  (plus the same bound on the unfiltered history used to re-apply a filter);
* highlighting classifies a line only when it is drawn, with a small bounded cache.

What a line *means* (capacity line, ready, warning, fatal) is decided by the core's log
parser (``ui.linekinds``), or by the ``classify`` a caller injects, so the widget stays a
view. The parser is loaded with the first line to highlight, not with the console's first
frame (it brings every engine's log grammar, and that frame shows no line).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import ClassVar

from rich.highlighter import Highlighter
from rich.style import Style
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.events import MouseScrollUp
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, Log

from specconsole.ui.viewmodels import LINE_KINDS, LineClassifier

DEFAULT_MAX_LINES = 5000
"""Lines kept in the pane; older ones are dropped (the session folder keeps the full log)."""

_CLASSIFY_CACHE_SIZE = 4096


class JournalHighlighter(Highlighter):
    """Styles a whole line by its parsed kind and marks occurrences of the search term."""

    def __init__(
        self, classify: LineClassifier | None, styles: Callable[[], dict[str, Style]]
    ) -> None:
        self._classify = classify
        """None: the core's log parser, loaded with the first line to classify."""
        self._cache: dict[str, str | None] = {}
        self._styles = styles
        """Rich style per line kind (``fatal``, ``warning``...), plus ``match``."""
        self.term: str = ""
        """Search term to mark (case-insensitive); empty marks nothing."""

    def kind(self, line: str) -> str | None:
        """The line's kind, memoised in a bounded cache (lines repeat when scrolling)."""
        try:
            return self._cache[line]
        except KeyError:
            pass
        if self._classify is None:
            from specconsole.ui.linekinds import classify_line  # the parser: with a first line

            self._classify = classify_line
        kind = self._classify(line)
        if len(self._cache) >= _CLASSIFY_CACHE_SIZE:
            self._cache.clear()
        self._cache[line] = kind
        return kind

    def highlight(self, text: Text) -> None:
        styles = self._styles()
        kind = self.kind(text.plain)
        if kind is not None and kind in styles:
            text.stylize(styles[kind])
        if self.term:
            match_style = styles.get("match")
            if match_style is not None:
                text.highlight_words([self.term], match_style, case_sensitive=False)


class JournalLog(Log):
    """A ``Log`` that remembers a bounded unfiltered history so a filter can be applied.

    Scrolling back or sideways is reading: it pauses following, and following again (``f``)
    returns to the last line and the first column, so the pane never stays scrolled
    sideways while it follows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "scroll_up", "up", show=False),
        Binding("j", "scroll_down", "down", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {f"journal--{kind}" for kind in LINE_KINDS} | {
        "journal--match"
    }

    def __init__(
        self,
        classify: LineClassifier | None,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        id: str | None = None,
    ) -> None:
        super().__init__(highlight=True, max_lines=max_lines, auto_scroll=True, id=id)
        self.highlighter = JournalHighlighter(classify, self._kind_styles)
        self._styles: dict[str, Style] | None = None
        self._history: deque[str] = deque(maxlen=max_lines)
        self._filter = ""

    @property
    def journal_highlighter(self) -> JournalHighlighter:
        assert isinstance(self.highlighter, JournalHighlighter)
        return self.highlighter

    @property
    def history_size(self) -> int:
        """Lines held in the unfiltered history (bounded by ``max_lines``)."""
        return len(self._history)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None  # recomputed on the next draw, from the new theme

    def _kind_styles(self) -> dict[str, Style]:
        if self._styles is None:
            self._styles = {
                kind: self.get_component_rich_style(f"journal--{kind}", partial=True)
                for kind in (*LINE_KINDS, "match")
            }
        return self._styles

    class UserScrolled(Message):
        """The user scrolled back to read: following pauses."""

    def append(self, lines: Iterable[str]) -> None:
        """Add a batch of lines, showing those that pass the current filter."""
        batch = [part for line in lines for part in (line.splitlines() or [""])]
        self._history.extend(batch)
        term = self._filter
        shown = batch if not term else [line for line in batch if term in line.lower()]
        if shown:
            self.write_lines(shown, scroll_end=False)
            self._keep_following()

    def reset(self) -> None:
        """Forget every line (the pane now shows another box of a pool)."""
        self._history.clear()
        self.clear()

    def _keep_following(self) -> None:
        # ``Log`` only follows while the view is exactly at the end; a resize (the crash
        # banner appearing) would silently stop it. Following is an explicit mode here.
        if self.auto_scroll:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_resize(self) -> None:
        self._keep_following()

    def _user_scrolled_back(self) -> None:
        if self.auto_scroll:
            self.post_message(self.UserScrolled())

    def action_scroll_up(self) -> None:
        self._user_scrolled_back()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._user_scrolled_back()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._user_scrolled_back()
        super().action_scroll_home()

    def action_scroll_left(self) -> None:
        self._user_scrolled_back()
        super().action_scroll_left()

    def action_scroll_right(self) -> None:
        self._user_scrolled_back()
        super().action_scroll_right()

    def _on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        self._user_scrolled_back()
        super()._on_mouse_scroll_up(event)

    def set_filter(self, term: str) -> None:
        """Show only lines containing ``term`` (case-insensitive); empty shows everything."""
        term = term.strip().lower()
        self.journal_highlighter.term = term
        if term == self._filter:
            self.refresh()
            return
        self._filter = term
        self.clear()
        shown = (
            list(self._history)
            if not term
            else [line for line in self._history if term in line.lower()]
        )
        self.write_lines(shown, scroll_end=True)
        self.refresh()


class JournalPane(Vertical):
    """Log view plus a search box; follow/pause and filter are its only state."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_search", "clear search", show=False),
    ]

    follow: reactive[bool] = reactive(True)
    """Scroll to new lines as they arrive; off = paused where the user is reading."""

    def __init__(
        self,
        classify: LineClassifier | None = None,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._classify = classify
        self._max_lines = max_lines
        self.border_title = "Journal"

    def compose(self) -> ComposeResult:
        yield JournalLog(self._classify, max_lines=self._max_lines, id="journal-log")
        yield Input(placeholder="search the log (enter: keep, esc: clear)", id="journal-search")

    def on_mount(self) -> None:
        self._update_subtitle()

    @property
    def log_view(self) -> JournalLog:
        return self.query_one(JournalLog)

    @property
    def search_box(self) -> Input:
        return self.query_one("#journal-search", Input)

    def append(self, lines: Iterable[str]) -> None:
        """Add a batch of log lines (one UI update per batch)."""
        self.log_view.append(lines)
        self._update_subtitle()

    def reset(self) -> None:
        """Empty the pane before another box's journal is written into it."""
        self.log_view.reset()
        self._update_subtitle()

    def watch_follow(self, follow: bool) -> None:
        log = self.log_view
        log.auto_scroll = follow
        if follow:
            log.scroll_to(x=0, animate=False, immediate=True)
            log.scroll_end(animate=False, immediate=True, x_axis=False)
        self._update_subtitle()

    def toggle_follow(self) -> None:
        self.follow = not self.follow

    @on(JournalLog.UserScrolled)
    def _user_scrolled(self, event: JournalLog.UserScrolled) -> None:
        event.stop()
        self.follow = False

    def open_search(self) -> None:
        """Show the search box and focus it."""
        self.add_class("-searching")
        self.search_box.focus()

    def action_clear_search(self) -> None:
        self.search_box.value = ""
        self.log_view.set_filter("")
        self.remove_class("-searching")
        self.log_view.focus()
        self._update_subtitle()

    @on(Input.Changed, "#journal-search")
    def _search_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.log_view.set_filter(event.value)
        self._update_subtitle()

    @on(Input.Submitted, "#journal-search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.remove_class("-searching")
        self.log_view.focus()

    def _update_subtitle(self) -> None:
        log = self.log_view
        mode = "following" if self.follow else "paused"
        term = log.journal_highlighter.term
        shown = f"{log.line_count:,} lines"
        if term:
            shown = f"{log.line_count:,}/{log.history_size:,} lines match {term!r}"
        self.border_subtitle = f"{mode} · {shown}"
