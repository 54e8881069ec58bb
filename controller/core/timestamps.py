"""Kubernetes timestamps: the one place they are parsed and formatted.

Pure, bottom layer. Epoch seconds (what `Clock.now()` gives) are the one time currency of every
decision; text only at the edges: RFC 3339 with second precision for object timestamps and
annotations, MicroTime for Leases and events.k8s.io.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_timestamp(text: str | None) -> float | None:
    """A Kubernetes RFC 3339 timestamp (`2024-01-02T03:04:05Z`) in epoch seconds, or None."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def format_timestamp(seconds: float) -> str:
    """Epoch seconds as a Kubernetes timestamp (second precision, UTC)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_timestamp(seconds: float) -> str:
    """Epoch seconds as a Kubernetes MicroTime (used by Leases and events.k8s.io)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
