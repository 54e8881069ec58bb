"""Karpy's narrow Kubernetes adapter (`client.py`) and its typed errors (`errors.py`)."""
