"""Garbage collection: leaked instances and orphan nodes (karpy decision; spec §8.1)."""
