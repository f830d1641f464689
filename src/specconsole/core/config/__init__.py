"""One server configuration: its model, its checks, its command line and its unit file.

``model`` is the typed ``[server]`` table (:class:`~.model.ServerConfig`); ``validation``
checks it (the engine's own rules come from its package through :mod:`specconsole.core.engine`);
``render``, ``command`` and ``systemd`` spell it as argv, a shell line or a unit and read
those back; ``unit`` edits the user's own unit in place; ``importplan`` starts a plan from the
box's service; ``jobscript`` wraps it for Slurm; ``bounds`` and ``secrets`` are the limits and
the secret rule every writer applies.
"""
