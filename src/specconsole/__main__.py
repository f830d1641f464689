"""`python -m specconsole` is the same as the `specconsole` console script."""

from specconsole.cli import main

raise SystemExit(main())
