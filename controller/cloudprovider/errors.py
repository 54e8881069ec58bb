"""Typed errors of the `CloudProvider` protocol (see `base.py`).

Callers branch on the type, never on the text: `InsufficientCapacityError` means "no offering
could be bought right now" (pods stay pending and are retried), `NodeNotFoundError` means "the
instance does not exist (any more)" (termination and garbage collection treat it as done),
`ThrottledError` means "the cloud refused the call for its request rate, nothing was done"
(RequestLimitExceeded: the caller retries after `retry_after` seconds, it is no failure of the
node or of its offerings), anything else is a `CloudProviderError`.
"""

from __future__ import annotations


class CloudProviderError(Exception):
    """A cloud call failed; the message says what was attempted and why."""


class InsufficientCapacityError(CloudProviderError):
    """No instance-type option of a request could be launched (every offering was unavailable)."""


class NodeNotFoundError(CloudProviderError):
    """The instance of a provider ID does not exist, or is already terminated."""


class ThrottledError(CloudProviderError):
    """The cloud refused the call for the account's request rate (EC2's RequestLimitExceeded);
    nothing was done. `retry_after`: seconds until a retry may be answered."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
