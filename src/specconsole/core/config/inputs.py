"""Reading untrusted input safely: structured documents, names that reach a shell or a unit,
and server URLs — each refused with the field and the fix instead of a traceback.

Why one module: the second hostile-input round (issue 27) found the same classes of defect in
several readers at once — a deeply nested TOML array was a ``RecursionError`` in ``validate``
and ``render``, ``http://127.0.0.1:99999`` a ``ValueError`` in ``bench``, ``[host] alias =
"-oProxyCommand=..."`` and ``[service] unit = "a\\nb"`` were accepted. Every reader (plans,
profiles, configurations, ``bench``'s and ``rollback``'s options, session records) goes through
these functions, so a class is fixed once:

* :func:`load_toml` / :func:`load_json` — parse, then refuse nesting deeper than
  :data:`MAX_NESTING` (a parser's own recursion limit becomes an error naming the document);
* :func:`host_problem`, :func:`alias_problem`, :func:`unit_name_problem` — what may name a
  box or a unit (no option-like leading ``-``, no shell metacharacters, no control
  characters);
* :func:`did_you_mean` — the closest known key to a misspelt one, for every table's "unknown
  key" sentence;
* :func:`url_problem` — a server base URL: ``http``/``https``, a host, a port in 1-65535, no
  blank or control character (a raw space would end the HTTP request line).

Pure: no I/O. Each ``*_problem`` returns ``''`` for a good value, else one sentence with the
fix; the loaders raise the caller's own error type.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from specconsole.core.config.bounds import control_char_problem

__all__ = [
    "MAX_NESTING",
    "alias_problem",
    "check_nesting",
    "did_you_mean",
    "host_problem",
    "load_json",
    "load_toml",
    "nesting_depth",
    "too_deep_message",
    "unit_name_problem",
    "url_problem",
]

MAX_NESTING = 32
"""Deepest nesting of arrays and tables any input of specconsole needs (a plan is 3 deep)."""

ErrorType = Callable[[str], Exception]


def nesting_depth(value: Any, limit: int = MAX_NESTING) -> int:
    """How deeply ``value``'s lists and dicts nest (iterative; stops counting past ``limit``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            deepest = max(deepest, depth + 1)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def too_deep_message(where: str) -> str:
    """The error for a document nested deeper than :data:`MAX_NESTING`."""
    return (
        f"{where} nests arrays or tables more than {MAX_NESTING} deep; fix: flatten it "
        "(no setting of specconsole needs that depth)"
    )


def load_toml(text: str, where: str, error: ErrorType) -> dict[str, Any]:
    """``tomllib.loads(text)``; bad syntax or too deep a nesting raises ``error(message)``
    naming ``where``."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{where} is not valid TOML ({exc}); fix the syntax at that line") from None
    except RecursionError:
        raise error(too_deep_message(where)) from None
    check_nesting(document, where, error)
    return document


def check_nesting(value: Any, where: str, error: ErrorType) -> None:
    """Raise ``error`` when ``value`` nests deeper than :data:`MAX_NESTING`."""
    if nesting_depth(value) > MAX_NESTING:
        raise error(too_deep_message(where))


def load_json(text: str | bytes, where: str, error: ErrorType) -> Any:
    """``json.loads(text)`` with the same guarantees as :func:`load_toml`."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise error(too_deep_message(where)) from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        raise error(f"{where} is not valid JSON ({exc})") from None
    check_nesting(value, where, error)
    return value


_HOSTNAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})\Z")
_IPV6 = re.compile(r"\[?[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?\]?\Z")


def _box_name_problem(value: str, where: str, fits: bool, what: str, fix: str) -> str:
    """The rule every name of a box follows: no control character, no leading ``-`` (ssh
    would read an option), and the name's own characters (``fits``)."""
    if problem := control_char_problem(value):
        return f"{where} {problem}; fix: {fix}"
    if value.startswith("-"):
        return f"{where} = {value!r} starts with '-', which ssh would read as an option; fix: {fix}"
    if not fits:
        return f"{where} = {value!r} is not {what}; fix: {fix}"
    return ""


def host_problem(value: str, where: str) -> str:
    """'' for a hostname or an IP address, else why not (an option, a shell word, a blank)."""
    fits = bool(_HOSTNAME.match(value) or (":" in value and _IPV6.match(value)))
    what = "a hostname or an IP address (letters, digits, '.', '-', '_'; IPv6 in brackets)"
    return _box_name_problem(value, where, fits, what, "give the box's name or address")


_ALIAS = re.compile(r"[A-Za-z0-9_.@:%+-]+\Z")


def alias_problem(value: str, where: str) -> str:
    """'' for an ``~/.ssh/config`` ``Host`` alias (which may also be a hostname)."""
    what = "an ssh Host alias (no blanks, quotes or shell characters)"
    fix = "give the Host alias from ~/.ssh/config, or a hostname"
    return _box_name_problem(value, where, bool(_ALIAS.match(value)), what, fix)


_UNIT_NAME = re.compile(r"[A-Za-z0-9:_.\\@-]+\Z")


def unit_name_problem(value: str, where: str, suffix: str = ".service") -> str:
    """'' for a systemd unit name (``sglang.service``, ``sglang@1.service``): systemd's own
    characters only, no path, ending in ``suffix``."""
    fix = f'fix: give a unit name such as "llm-server{suffix}" (the folder is unit_dir)'
    if problem := control_char_problem(value):
        return f"{where} {problem}; {fix}"
    if "/" in value or not value.endswith(suffix) or len(value) > 255:
        return f"{where} = {value!r} must be a unit name ending in {suffix}; {fix}"
    if value.startswith("-") or not _UNIT_NAME.match(value) or value == suffix:
        return (
            f"{where} = {value!r} is not a systemd unit name (letters, digits, ':', '_', '.', "
            f"'@', '-'; not starting with '-'); {fix}"
        )
    return ""


def url_problem(url: object, where: str = "URL") -> str:
    """'' for a server base URL (``http://127.0.0.1:30000``), else why not and the fix."""
    reason = _url_reason(url)
    if not reason:
        return ""
    return (
        f"{where} = {url!r} is not a server URL: {reason}; fix: give the server's base URL, "
        "e.g. http://127.0.0.1:30000"
    )


def _url_reason(url: object) -> str:
    if not isinstance(url, str):
        return "it must be a string"
    if problem := control_char_problem(url):
        return f"it {problem}"
    if any(ch.isspace() for ch in url):
        return "it contains a blank (it would end the HTTP request line)"
    if not url.isascii():
        return "it has characters outside ASCII (percent-encode the path, punycode the host)"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"invalid port ({exc})"
    if parts.scheme not in ("http", "https"):
        return "not an http:// or https:// URL"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0 is not a server's port (1-65535)"
    if parts.query or parts.fragment:
        return "it has a query or a fragment"
    return ""


def did_you_mean(word: object, known: Any) -> str:
    """``"did you mean 'max_trials'? "`` when one of ``known`` is close to ``word`` (a
    misspelt key must not pass as an unrelated error later), else ``""``."""
    close = difflib.get_close_matches(str(word), sorted(known), n=1)
    return f"did you mean {close[0]!r}? " if close else ""
