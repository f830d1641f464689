#!/usr/bin/env python3
"""Fetch the vLLM source distributions the oracle tests read (tests/oracle/test_vllm_releases.py).

Why not ``pip download``: for an sdist pip runs the package's build backend to read its
metadata, and vLLM's pulls in torch (minutes, gigabytes). The file itself is only the source:
this script asks the package index's simple API (PEP 691 JSON) for the release's ``.tar.gz``,
downloads it with urllib and checks the index's sha256 before keeping it, into the same cache
outside the repository as the SGLang wheels (``${SPECCONSOLE_WHEEL_CACHE:-~/.cache/
specconsole/wheels}``). A cached file is kept (re-runs cost nothing). Off-line it says so and
exits 0 (1 under ``CI=true``); the tests then skip (or fail under ``CI=true``).

Usage: ``scripts/fetch-vllm-sdists.py [VERSION ...]`` (default: tests/oracle/vllm-versions.txt,
or ``ORACLE_VLLM_VERSIONS``); ``SPECCONSOLE_VLLM_INDEX`` overrides the index
(default ``https://pypi.org/simple``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(
    os.environ.get("SPECCONSOLE_WHEEL_CACHE", Path.home() / ".cache" / "specconsole" / "wheels")
)
INDEX = os.environ.get("SPECCONSOLE_VLLM_INDEX", "https://pypi.org/simple").rstrip("/")
TIMEOUT_S = 120.0
MAX_BYTES = 200 * 1024 * 1024
"""An sdist is tens of MB; anything far larger is not what we asked for."""


def versions(argv: list[str]) -> list[str]:
    if argv:
        return argv
    env = os.environ.get("ORACLE_VLLM_VERSIONS")
    text = env if env else (ROOT / "tests" / "oracle" / "vllm-versions.txt").read_text()
    return text.split()


def index_files() -> dict[str, dict[str, object]]:
    """``filename -> {url, hashes}`` for the vllm project, from the simple API's JSON form."""
    req = urllib.request.Request(
        f"{INDEX}/vllm/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
        data = json.load(resp)
    return {f["filename"]: f for f in data.get("files", []) if isinstance(f, dict)}


def fetch(version: str, files: dict[str, dict[str, object]]) -> Path:
    name = f"vllm-{version}.tar.gz"
    entry = files.get(name)
    if entry is None:
        raise LookupError(f"the index has no {name}")
    hashes = entry.get("hashes")
    want = hashes.get("sha256") if isinstance(hashes, dict) else None
    if not isinstance(want, str):
        raise LookupError(f"the index gives no sha256 for {name}")
    digest = hashlib.sha256()
    size = 0
    with tempfile.NamedTemporaryFile(dir=CACHE, prefix=".partial-", delete=False) as out:
        tmp = Path(out.name)
        try:
            with urllib.request.urlopen(str(entry["url"]), timeout=TIMEOUT_S) as resp:
                for _ in range(MAX_BYTES // 65536 + 2):  # bounded: MAX_BYTES in 64 KiB reads
                    block = resp.read(65536)
                    if not block:
                        break
                    size += len(block)
                    if size > MAX_BYTES:
                        raise ValueError(f"{name} is larger than {MAX_BYTES} bytes")
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != want:
                raise ValueError(f"{name}: sha256 {digest.hexdigest()} is not the index's {want}")
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    dest = CACHE / name
    tmp.chmod(0o644)  # like the wheels pip downloads (NamedTemporaryFile makes it 0600)
    tmp.replace(dest)
    return dest


def main(argv: list[str]) -> int:
    CACHE.mkdir(parents=True, exist_ok=True)
    wanted = [v for v in versions(argv) if not (CACHE / f"vllm-{v}.tar.gz").is_file()]
    if not wanted:
        return 0
    status = 0
    try:
        files = index_files()
    except (OSError, ValueError) as exc:
        print(
            f"fetch-vllm-sdists: cannot read {INDEX}/vllm/ ({exc}); oracle tests will skip",
            file=sys.stderr,
        )
        files = {}
        status = 1
    for version in wanted if files else []:
        print(f"fetch-vllm-sdists: vllm=={version} (sdist) -> {CACHE}", file=sys.stderr)
        try:
            fetch(version, files)
        except (OSError, ValueError, LookupError) as exc:
            print(
                f"fetch-vllm-sdists: vllm=={version}: {exc}; oracle tests will skip",
                file=sys.stderr,
            )
            status = 1
    return status if os.environ.get("CI") == "true" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
