"""What the command-line entry does before its first import so the console opens at once.

Two things a start would otherwise pay for on every launch: Python's cyclic collector walking
everything start-up builds (:mod:`.collection`, held until the first frame), and compiling the
methods ``@dataclass`` generates for some 210 record types (:mod:`.generated_code`, cached
per user). It lives at the top level, not in ``ui``: the entry sets both up before it knows
the command.
"""

from specconsole.startup.collection import hold_collection, release_collection
from specconsole.startup.generated_code import cache_generated_code, stop_caching

__all__ = ["cache_generated_code", "hold_collection", "release_collection", "stop_caching"]
