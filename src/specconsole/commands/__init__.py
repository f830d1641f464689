"""Subcommands of the ``specconsole`` CLI, one module per concern (see ``specconsole.cli``)."""
