"""Dataclasses' generated methods compiled once per install, not again on every start.

Why: ``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``
and (frozen) ``__setattr__``/``__delattr__`` as Python source and compiles it with ``exec``
while the class is created. The console's start creates some 210 of specconsole's own
dataclasses (the state machine's events, effects and state, log events, trials, plans), and
compiling their 1,200 generated functions is 110–180 ms here: more than half of what
specconsole adds to Textual's own start. Python caches the bytecode of modules
(``__pycache__``) but not of this generated source, so every start compiled it again.

:func:`cache_generated_code` puts one name, ``exec``, into the ``dataclasses`` module's
namespace (where its code generation looks ``exec`` up before the builtin). That ``exec``
looks the exact source text up in a per-user cache file and runs the code object compiled
from it before; only a text it has not seen is compiled, as the builtin would compile it
(file name ``<string>``, no inherited ``__future__`` flags), and it is added to the file
when the process exits. The key is the whole source text, so a cached entry can only ever be
the compilation of the very text asked for, and the file is named after the interpreter's
bytecode version (its magic number), so another Python never reads it. Classes come out
exactly as without the cache (a test compares their methods' code objects).

The file is the user's own, like ``__pycache__``: written atomically (a temporary file then
``os.replace``, so concurrent starts never see half a file), mode 0600 in a 0700 folder,
read with ``marshal`` (which trusts its input, as the import system trusts ``.pyc`` files),
and a file that cannot be read or written is ignored: the start then compiles as before.
It stays bounded: past :data:`MAX_ENTRIES` it starts again from what the last process used.

Only the command-line entry installs it (``specconsole.cli.main``); importing specconsole as
a library leaves ``dataclasses`` untouched.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

__all__ = ["MAX_ENTRIES", "GeneratedCodeCache", "cache_generated_code", "stop_caching"]

MAX_ENTRIES = 4096
"""Entries one cache file may hold. The console's start uses about 1,250 and every command
together under 2,000; past this the file is rewritten with only what the last process
used, so texts no release generates any more do not pile up."""


def cache_file(directory: Path) -> Path:
    """The cache file in ``directory`` for this interpreter's bytecode version."""
    magic = importlib.util.MAGIC_NUMBER.hex()
    return directory / f"dataclass-methods.{sys.implementation.cache_tag}-{magic}.marshal"


class GeneratedCodeCache:
    """Source text → compiled code, loaded from one file and saved back to it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stored = _read(path)
        self._used: dict[str, bytes] = {}
        self._new: dict[str, bytes] = {}
        self.hits = 0
        """Texts found: in the file, or compiled earlier in this process."""
        self.compiled = 0
        """Texts compiled here (saved to the file at exit)."""

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        """The builtin ``exec``, with the compilation of a source text seen before reused."""
        if globals is None:  # as the builtin: the caller's namespace
            caller = sys._getframe(1)
            globals = caller.f_globals
            locals = caller.f_locals if locals is None else locals
        if isinstance(source, str):
            source = self._code(source)
        builtins.exec(source, globals, locals)

    def _code(self, source: str) -> CodeType:
        blob = self._used.get(source) or self._stored.get(source)
        if blob is not None:
            try:
                code = marshal.loads(blob)
            except (EOFError, ValueError, TypeError):
                code = None
            if isinstance(code, CodeType):
                self._used[source] = blob
                self.hits += 1
                return code
        code = compile(source, "<string>", "exec", dont_inherit=True)
        self._used[source] = self._new[source] = marshal.dumps(code)
        self.compiled += 1
        return code

    def save(self) -> None:
        """Write what this process compiled into the file (merged with what another process
        may have written since); nothing when every text was found. Never raises on I/O."""
        if not self._new:
            return
        merged = _read(self.path)
        merged.update(self._new)
        if len(merged) > MAX_ENTRIES:
            merged = dict(self._used)
        import tempfile  # only a start that compiled something new writes

        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".dataclass-methods-")
            try:
                with os.fdopen(fd, "wb") as out:  # mkstemp creates it 0600
                    out.write(marshal.dumps(merged))
                Path(temporary).replace(self.path)
            except BaseException:
                Path(temporary).unlink()
                raise
        except OSError:
            return  # a read-only or full home: the next start compiles, as without a cache
        self._stored = merged
        self._new = {}


def _read(path: Path) -> dict[str, bytes]:
    """The file's entries; none when it is missing, unreadable or not a cache file."""
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bytes)}


_installed: GeneratedCodeCache | None = None


def cache_generated_code(directory: Path) -> GeneratedCodeCache | None:
    """Route ``dataclasses``' code generation through a cache kept in ``directory`` and saved
    at exit. Returns it, or ``None`` when something else already replaced ``exec`` there (or
    this was already called: the first cache stays), or when ``directory`` is not absolute (a
    home that cannot be found gives ``~/.cache``, which would land in the working folder)."""
    global _installed
    if "exec" in vars(dataclasses) or not directory.is_absolute():
        return None
    _installed = GeneratedCodeCache(cache_file(directory))
    dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
    atexit.register(_installed.save)
    return _installed


def stop_caching() -> None:
    """Save and remove the cache :func:`cache_generated_code` installed (tests, embedding)."""
    global _installed
    if _installed is None:
        return
    cache, _installed = _installed, None
    atexit.unregister(cache.save)
    cache.save()
    if vars(dataclasses).get("exec") == cache.exec:
        del dataclasses.exec  # type: ignore[attr-defined]
