"""specconsole.sim (see README Architecture)."""
