"""Deprovisioning: remove or replace nodes that are expired, empty, or can be consolidated.

Spec §6 (Karpenter v0.27–v0.31), laid out as Karpenter's `deprovisioning` package. Pure decision
modules over cluster state's own views (`types.Inputs` wraps the state `Snapshot`; a `Candidate`
wraps a `NodeView`): `candidates.py` (who may be disrupted, in which order), `simulation.py`
(would the pods fit elsewhere), one module per method — `expiration.py`, `emptiness.py`,
`emptynodeconsolidation.py`, `multinodeconsolidation.py`, `singlenodeconsolidation.py`,
`repackconsolidation.py` (karpy's) over `consolidation.py` (their shared core) —, `validation.py`
(the re-check after the validation wait) and `decide.py` (one pass: the methods in a fixed
order, the first that acts wins). `controller.py` is the acting edge (`reconcile()`).
"""
