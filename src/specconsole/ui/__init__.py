"""specconsole.ui (see README Architecture)."""
