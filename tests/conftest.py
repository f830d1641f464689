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
neighbour's load cannot bend their figures.
"""

from __future__ import annotations

import pytest

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
