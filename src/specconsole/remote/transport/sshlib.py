"""asyncssh, imported without the cryptography library's deprecation warnings it triggers.

Why: asyncssh still names DSA keys, so importing it (and loading keys) makes the
``cryptography`` package warn ``CryptographyDeprecationWarning: DSA is deprecated`` — five
lines at the start of every headless run and one as the console quits (issue 27, #18). A user
never sees a library's warnings. The filter is narrow: that one warning category, and only
when asyncssh's own code triggers it; every other warning, and that category from anywhere
else, still shows.
"""

from __future__ import annotations

import warnings

from cryptography.utils import CryptographyDeprecationWarning

warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)")

import asyncssh  # noqa: E402 - after the filter, which must see the import's warnings

__all__ = ["asyncssh"]
