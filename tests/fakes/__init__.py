"""Fakes of karpy's own adapters (cloud provider, Kubernetes client) with knobs for tests."""
