"""specconsole.controller (see README Architecture)."""
