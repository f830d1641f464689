"""The pure core: engine knowledge, metrics, the trial state machine.

Nothing in here performs I/O or imports Textual, asyncssh, httpx or any adapter package; an
import-linter contract (pyproject.toml) and tests/test_layering.py enforce it. That keeps every
rule about SGLang and every state transition testable as plain data in, plain data out.
"""
