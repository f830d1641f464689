"""A text box that applies each key to itself: the box a key was sent to is the box it edits.

Why: Textual hands a key to the widget focused when the key *arrives*, but resolves the
widget's own bindings (``ctrl+a`` home, ``ctrl+k`` delete to the end, backspace, …) only once
the key has bubbled back up to the app, against whatever has focus *then*. A burst of keys
(fast typing, a paste without bracketed-paste mode, one tmux ``send-keys``) therefore split
between two boxes: the characters went to the box focused on arrival, the editing keys to
the box focused after a later ``tab`` — ``230.8`` in one field and others emptied (issue 42).
This box runs its own bindings when the key reaches it, in the order the keys came, so the
editing keys land with the characters; moving focus is the screen's, at arrival
(``ui.screens.editor``: ``tab``/``shift+tab``/``enter`` are priority bindings).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class FieldInput(Input):
    """An ``Input`` whose own key bindings act on itself when the key is delivered."""

    async def _on_key(self, event: events.Key) -> None:
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if binding.priority:
                continue  # the app ran priority bindings when the key arrived
            if await self.app.run_action(binding.action, self):
                event.stop()  # handled here: it never reaches the app's binding lookup
                event.prevent_default()  # nor Input's own handler
                return
