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

This package's ``__init__`` imports nothing, so a module that needs only the vocabulary
(:mod:`.events`) does not load the parser and every engine's grammar with it: import each
name from its module (``core.logs.parser.LogParser``, ``core.logs.dialect.classify_fatal``).
"""
