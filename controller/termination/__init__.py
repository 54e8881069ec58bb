"""Termination: the `karpenter.sh/termination` finalizer (spec §7).

`controller.TerminationController.reconcile()` (job `node.termination`) drives every deleting
node that carries the finalizer: cordon, drain (`terminator.drain_plan`, pure), terminate the
instance, remove the finalizer. Deprovisioning (and anything else) only deletes the Node object;
the finalizer does the rest, exactly as for `kubectl delete node`.
"""
