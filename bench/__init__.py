"""Benchmarks run by `make bench`; each prints figures and asserts nothing about time."""
