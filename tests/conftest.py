"""Shared pytest configuration: fixture modules that start real components, and how the
suite shares two cores.

``scripts/run-tests.sh`` runs the suite on two pytest-xdist workers with ``--dist
loadgroup``: most tests wait on real servers (loads, benchmark levels, sshd round trips), so
two at a time finish the suite in about half the wall time. Tests that share one real
component of a session (the systemd container, the Slurm cluster, the Docker engine, the
llama.cpp build's servers) are kept on one worker each by an ``xdist_group`` named after the
component (:func:`pytest_collection_modifyitems`): the component starts once and its tests
never race each other for it. Every test of the real vLLM bed goes to its group first, even
one that also uses the container (that worker boots a container of its own): a ``vllm
serve`` holds 3.7 GiB and a core, so one worker runs them one after another. Tests that
measure time against a model (``@pytest.mark.serial``) run afterwards on their own, so a
neighbour's load cannot bend their figures. Hypothesis runs without its timing checks
(the ``suite`` profile below).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "suite",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("suite")
"""Hypothesis's defaults time every example (a 200 ms deadline) and the generation (the
``too_slow`` health check): timed tests, which a loaded machine fails (the suite with a CPU
hog on each core: a first example that imports an engine's modules took longer than 200 ms).
Speed is measured by ``benchmarks/``, never by a test; every property keeps its own count of
examples (a test's ``@settings`` inherits this profile for what it does not set)."""

pytest_plugins = [
    "tests.fixtures.sshd",
    "tests.fixtures.slurm",
    "tests.fixtures.llamacpp",
    "tests.fixtures.vllm",
]

COMPONENT_GROUPS = {
    "vllm_bed": "vllm",
    "nspawn_box": "systemd-container",
    "slurm_cluster": "slurm",
    "docker_engine": "docker",
    "llamacpp_build": "llamacpp",
}
"""Session fixtures that start one real component, and the worker group their tests share
(the first one a test uses decides)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test that uses a shared component its component's ``xdist_group``."""
    for item in items:
        used = getattr(item, "fixturenames", ())
        for fixture, group in COMPONENT_GROUPS.items():
            if fixture in used:
                item.add_marker(pytest.mark.xdist_group(group))
                break
