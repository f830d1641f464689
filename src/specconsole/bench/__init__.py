"""The benchmark: prompts, the load generator and the runners the controller calls.

``ladder_run`` (each level's requests) and ``api`` (request bodies, stream parsing) are
standard-library only, so the very same code also runs on the GPU box inside the
self-contained remote runner;
``loadgen`` adapts them to httpx for the console side; ``runner`` and ``remote_runner``
implement :class:`specconsole.core.ports.BenchmarkRunner`. Metrics live in the pure
:mod:`specconsole.core.measure.metrics`.
"""
