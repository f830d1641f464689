"""Choosing the next trial: the strategies, the optimiser and what they predict.

``strategy`` picks the next configuration (grid, boundary, plateau, optimize); ``optimize``
with ``space``, ``focus`` and ``contenders`` is the constrained search; ``capacity`` predicts a
configuration's KV-cache capacity before a load is spent on it; ``pool`` holds the rules a
pool of boxes applies to its shared trials.
"""
