"""specconsole.remote (see README Architecture)."""
