"""Helpers shared by the test suite (builders, seed documents)."""
