"""The bottom layer: the vocabulary every other package may import, importing nothing of ours.

`quantity` (Kubernetes quantities and durations), `resources` (integer resource lists),
`requirements` (the node-selector requirement algebra), `taints` (taints, tolerations and their
matching) and `labels` (every well-known and karpy label, annotation, taint and finalizer key).
All pure; the import-linter contracts in `pyproject.toml` keep this package free of imports
from the rest of karpy.
"""
