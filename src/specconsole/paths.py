"""Where specconsole finds its packaged files and keeps its data, in one place.

Themes ship inside the wheel as ``specconsole/themes``; in an editable checkout they are the
repository's top-level ``themes/`` folder. Sessions go under the user's data directory unless
a folder is given.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _shipped(folder: str) -> Path:
    """``folder`` inside the installed package, or at the top of a checkout."""
    installed = _PACKAGE_DIR / folder
    if installed.is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent.parent / folder
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"specconsole {folder} not found in {installed} or {checkout}; reinstall the package"
    )


def themes_dir() -> Path:
    """The folder holding the ``.tcss`` stylesheets, installed or from a checkout."""
    return _shipped("themes")


def examples_dir() -> Path:
    """The example plans and profiles, installed (``specconsole/examples``) or from a checkout."""
    return _shipped("examples")


def data_dir() -> Path:
    """Per-user data folder (``$SPECCONSOLE_HOME`` overrides the platform default)."""
    override = os.environ.get("SPECCONSOLE_HOME")
    if override:
        return Path(override)
    from platformdirs import user_data_dir  # only without the override, which needs none

    return Path(user_data_dir("specconsole", appauthor=False))


def sessions_dir() -> Path:
    """Default parent folder for session records."""
    return data_dir() / "sessions"
