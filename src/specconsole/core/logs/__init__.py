"""Incremental parser from inference-server log lines to typed events.

Why it exists: the console must see a load progress, a capacity line or a crash the moment
it is logged, from whatever the box gives us. It is pure: lines in,
:mod:`specconsole.core.logs.events` values out, no I/O. The package's modules, outermost
first:

* :mod:`.prefixes` — the prefix layer (journalctl in every mode, docker / compose, kubectl /
  CRI, Ray, supervisord, SGLang's and vLLM's own headers of every release), table-driven;
* :mod:`.parser` — :class:`LogParser`: routes each message by its first word, groups
  multi-line tracebacks (:mod:`.groups`);
* :mod:`.sglang`, :mod:`.vllm`, :mod:`.service` — what each engine (and the service
  manager) prints, parsed by key (:mod:`.fields`);
* :mod:`.fatal` — the one fatal-cause classifier with its precedence order and SGLang's
  remedies (:data:`FIXES`).
"""

from __future__ import annotations

from .fatal import FIXES, classify_fatal, fatal_signature, is_exception_line
from .parser import LogParser, parse_lines

__all__ = [
    "FIXES",
    "LogParser",
    "classify_fatal",
    "fatal_signature",
    "is_exception_line",
    "parse_lines",
]
