"""Several boxes at once: the pool's runtime (``run``), the console's handle on it (``console``,
``box``) and how its run ends (``finish``); the headless driver is ``specconsole.headless.pool``.
"""
