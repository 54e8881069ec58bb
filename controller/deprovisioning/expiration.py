"""Expiration: replace a node older than its provisioner's `ttlSecondsUntilExpired` (spec §6.4).

Pure. A node is expired when its provisioner has the TTL and either it carries
`karpenter.sh/voluntary-disruption: expired` or `now > creationTimestamp + TTL` (karpy reads the
age directly instead of waiting for a marker pass). Candidates are filtered (PDB,
do-not-evict) and taken oldest expiry first; the first whose simulation does not abort is
replaced by the nodes the simulation launches ("pre-spun" capacity, possibly none). It
proceeds even if some pods cannot be placed (spec §12.11). One node per pass, no validation wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.core import labels as L
from controller.deprovisioning.candidates import candidates, expiration_time, filter_candidates
from controller.deprovisioning.simulation import simulate
from controller.deprovisioning.types import EXPIRATION, Candidate, Command, Inputs, Proposal, Scheduler

EXPIRED = "expired"


def is_expired(cand: Candidate, now: float) -> bool:
    expires = expiration_time(cand)
    if expires is None:
        return False
    marker = cand.node.annotations.get(L.VOLUNTARY_DISRUPTION)
    if marker is not None:
        return marker == EXPIRED
    return now > expires


@dataclass(frozen=True)
class Expiration:
    name: str = EXPIRATION
    method: str = EXPIRATION
    needs_validation: bool = False

    def compute(self, inputs: Inputs, scheduler: Scheduler) -> Proposal:
        found = candidates(inputs, lambda c: is_expired(c, inputs.now))
        kept, events = filter_candidates(found, inputs)
        kept.sort(key=lambda c: (expiration_time(c) or inputs.now, c.name))
        for cand in kept:
            sim = simulate(inputs, [cand], scheduler)
            if sim is None:
                continue
            return Proposal(Command(EXPIRATION, (cand,), sim.new_nodes), tuple(events), len(kept))
        return Proposal(events=tuple(events), eligible=len(kept))
