"""The Textual console: the only package that imports Textual.

It renders the controller's state snapshots and sends it intents; it never talks to SSH or
HTTP. Start at ``specconsole.ui.app.make_app``; ``docs/console.md`` describes the screen.
"""
