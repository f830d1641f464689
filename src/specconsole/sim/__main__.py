"""``python -m specconsole.sim``: start a simulated SGLang server with SGLang's flags.

Kept separate from :mod:`specconsole.sim.faces.sglang_server` so that importing the package never
pulls in
starlette or uvicorn; only running the process does.
"""

from __future__ import annotations

import sys

from specconsole.sim.process import main

if __name__ == "__main__":
    sys.exit(main())
