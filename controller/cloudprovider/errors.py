"""Typed errors of the `CloudProvider` protocol (see `base.py`).

Callers branch on the type, never on the text: `InsufficientCapacityError` means "no offering
could be bought right now" (pods stay pending and are retried), `NodeNotFoundError` means "the
instance does not exist (any more)" (termination and garbage collection treat it as done),
anything else is a `CloudProviderError`.
"""

from __future__ import annotations


class CloudProviderError(Exception):
    """A cloud call failed; the message says what was attempted and why."""


class InsufficientCapacityError(CloudProviderError):
    """No instance-type option of a request could be launched (every offering was unavailable)."""


class NodeNotFoundError(CloudProviderError):
    """The instance of a provider ID does not exist, or is already terminated."""
