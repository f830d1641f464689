#!/usr/bin/env python3
"""Write docs/plan-schema.json, the plan file's JSON Schema, from its one declaration
(specconsole.core.plans.schema) and the registered engines' [server] keys.

Editors that read JSON Schema for TOML (Taplo / Even Better TOML, via a `#:schema` line or
their settings) complete and check plan files with it. tests/core/test_plan_schema.py fails
when the committed file is not what this prints: run it after changing a plan's tables or an
engine's keys.

    .venv/bin/python scripts/plan-schema.py          # rewrite docs/plan-schema.json
    .venv/bin/python scripts/plan-schema.py --check  # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specconsole.core.plans.schema_export import plan_json_schema_text

TARGET = Path(__file__).resolve().parents[1] / "docs" / "plan-schema.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args()
    text = plan_json_schema_text()
    if args.check:
        current = TARGET.read_text() if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale: run scripts/plan-schema.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
