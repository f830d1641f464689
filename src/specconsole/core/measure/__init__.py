"""What a benchmark measured: per-request timelines, per-level metrics, statistics, SLOs and
the trial record that keeps them.

Standard library only: ``timeline``, ``stats``, ``slo`` and ``metrics`` are bundled into the
remote benchmark runner (``specconsole.bench.remote_runner``), so the box computes exactly
what the console does.
"""
