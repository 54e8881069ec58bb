"""Deprovisioning: remove or replace nodes that are expired, empty, or can be consolidated.

Spec §6 (Karpenter v0.27). Pure decision modules over a frozen `Snapshot` (`types.py`):
`candidates.py` (who may be disrupted, in which order), `simulation.py` (would the pods fit
elsewhere), `expiration.py`, `emptiness.py`, `consolidation.py` (the strategies),
`validation.py` (the re-check after the validation wait) and `decide.py` (one pass: strategies in
a fixed order, the first that acts wins). `controller.py` is the acting edge (`reconcile()`).
"""
