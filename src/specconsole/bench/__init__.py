"""specconsole.bench (see README Architecture)."""
