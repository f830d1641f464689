"""What the command-line entry does before its first import so the console opens at once.

One thing a start would otherwise pay for on every launch: Python's cyclic collector walking
everything start-up builds (:mod:`.collection`, held until the first frame). The rest of a
fast start is loading less: the console's first frame imports only what it draws
(``tests/test_startup_imports.py``). It lives at the top level, not in ``ui``: the entry sets
the hold up before it knows the command.
"""

from specconsole.startup.collection import hold_collection, release_collection

__all__ = ["hold_collection", "release_collection"]
