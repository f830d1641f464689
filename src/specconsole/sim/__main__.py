"""``python -m specconsole.sim``: start a simulated server with its engine's flags.

Kept separate from :mod:`specconsole.sim.process` so that importing the package never pulls in
starlette or uvicorn; only running the process does — and without them (the optional ``sim``
extra) it says so and how to install them, exit code 1, instead of a traceback.
"""

from __future__ import annotations

import sys

from specconsole.sim.serverlibs import server_unavailable

if __name__ == "__main__":
    why = server_unavailable("python -m specconsole.sim")
    if why is not None:
        print(f"specconsole.sim: error: {why}", file=sys.stderr)
        sys.exit(1)
    from specconsole.sim.process import main

    sys.exit(main())
