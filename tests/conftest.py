"""Shared pytest configuration: fixture modules that start real components."""

pytest_plugins = ["tests.fixtures.sshd", "tests.fixtures.slurm", "tests.fixtures.llamacpp"]
