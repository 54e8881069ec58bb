"""The bin-packing scheduler: pending pods → existing nodes first, then new nodes.

Pure (no Kubernetes client, no clock, no randomness). Entry point:

    schedule(inp: SchedulingInput) -> SchedulingResult

It follows spec §5.3–5.7 (Karpenter v0.27): pods sorted by cpu then memory descending, each
placed on the first existing node that accepts it, then on an in-flight new node, then on a new
node from the first provisioner (weight order) that can take it.
"""

from __future__ import annotations

from controller.scheduling.types import SchedulingInput, SchedulingResult


def schedule(inp: SchedulingInput) -> SchedulingResult:
    """Decide where every pod of `inp.pods` goes (see the module docstring)."""
    raise NotImplementedError("scheduler lands in the next commits")
