"""specconsole.session (see README Architecture)."""
