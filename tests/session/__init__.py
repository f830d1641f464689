"""Tests of the session records, store and reports."""
