"""The footer: the keys that apply now, ``?`` and ``q`` always first.

Why not Textual's ``Footer``: it lists every enabled binding in binding order and cuts the
line at the screen's edge, so at 80 columns ``? help`` and ``q quit`` fell off in exactly
the states (crash, paused) where people need them. This bar draws what
``present.keyboard.footer.footer_hints`` chooses for its own width from the state the screen gives
it, drops whole hints rather than cutting one, and leaves the crash banner's own keys to
the banner. A click on a hint presses its key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual.reactive import reactive
from textual.widget import Widget

from specconsole.present.keyboard.footer import GAP, footer_hints
from specconsole.present.keyboard.keymap import BY_ID


@dataclass(frozen=True, slots=True)
class KeyBarState:
    """What the footer is drawn from."""

    available: frozenset[str] = frozenset()
    """Command ids that apply now (``present.keyboard.keys.available``)."""
    banner: frozenset[str] = frozenset()
    """Command ids the crash banner lists (left out of the footer while it shows)."""
    pool: bool = False
    compact: bool = False


class KeyBar(Widget):
    """One line of key hints, chosen for the bar's width."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"keybar--key", "keybar--label"}

    keys_now: reactive[KeyBarState] = reactive(KeyBarState, layout=False)

    def render(self) -> RenderResult:
        key_style = self.get_component_rich_style("keybar--key", partial=True)
        label_style = self.get_component_rich_style("keybar--label", partial=True)
        state = self.keys_now
        hints = footer_hints(
            state.available,
            self.size.width - 1,
            banner=state.banner,
            pool=state.pool,
            compact=state.compact,
        )
        text = Text(no_wrap=True, overflow="crop")
        text.append(" ")
        for i, hint in enumerate(hints):
            if i:
                text.append(" " * GAP)
            key = BY_ID.get(hint.id)
            click = Style()
            if key is not None:
                press = key.binding.split(",")[0]
                click = Style(meta={"@click": f"app.simulate_key({press!r})"})
            text.append(hint.key, style=key_style + click)
            text.append(f" {hint.label}", style=label_style + click)
        return text

    @property
    def plain(self) -> str:
        """The bar as text (tests)."""
        return str(self.render()) if self.is_mounted else ""
