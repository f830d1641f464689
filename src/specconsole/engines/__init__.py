"""The inference servers specconsole drives, one package per engine.

Each package (``sglang/``, ``vllm/``) implements :class:`specconsole.core.engine.Engine` and
exposes one object, ``ENGINE``, registered in ``pyproject.toml``'s
``[project.entry-points."specconsole.engines"]``. Nothing outside a package imports its
modules (only the registry loads ``ENGINE``), and no package imports another: import-linter
contracts keep it so. How to add one: docs/architecture.md, "How to add an engine".
"""

DEFAULT_ENGINE = "sglang"
"""The engine a ``[server]`` table without ``engine`` runs (the product was built for it):
this distribution's ``default_engine`` setting (``pyproject.toml``'s
``[project.entry-points."specconsole.settings"]``, read by ``core.engine.registry``)."""
