"""specconsole: a terminal console that tunes speculative decoding on a remote GPU box.

Importing the package pulls in nothing heavy, so `specconsole --version` is instant and the
pure core can be used from scripts without Textual, asyncssh or httpx.
"""

__version__ = "0.1.0"
