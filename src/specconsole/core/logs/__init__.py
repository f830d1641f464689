"""Incremental parser from inference-server log lines to typed events.

Why it exists: the console must see a load progress, a capacity line or a crash the moment
it is logged, from whatever the box gives us. It is pure: lines in,
:mod:`specconsole.core.logs.events` values out, no I/O. It names no engine: each engine's
package describes its own lines as a :class:`~.grammar.LogGrammar`, found through the engine
registry. The package's modules, outermost first:

* :mod:`.prefixes` — the prefix layer (journalctl in every mode, docker / compose, kubectl /
  CRI, Ray, supervisord, PyTorch ranks), table-driven;
* :mod:`.parser` — :class:`LogParser`: routes each message by its first word to the handler
  of the grammars in use (:mod:`.dialect` compiles them), groups multi-line tracebacks
  (:mod:`.groups`);
* :mod:`.grammar` — what an engine's grammar holds: heads, header readers, a fast path,
  fatal signatures with their ranks and remedies, ready lines...;
* :mod:`.service` — what the service manager (systemd, supervisord) says about the server;
* :mod:`.fatal` — the one fatal-cause classifier, the generic causes any PyTorch server shows
  and their remedies.
"""

from __future__ import annotations

from .dialect import classify_fatal, fatal_signature, registered_grammars
from .fatal import is_exception_line
from .grammar import LogGrammar
from .parser import LogParser, parse_lines

__all__ = [
    "LogGrammar",
    "LogParser",
    "classify_fatal",
    "fatal_signature",
    "is_exception_line",
    "parse_lines",
    "registered_grammars",
]
