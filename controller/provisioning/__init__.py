"""Provisioning: batch pending pods, schedule them, launch nodes, bind the pods.

`controller.ProvisioningController.reconcile()` (job `provisioning`) — snapshot → decide →
act; `batcher.Batcher` — the 1 s idle / 10 s max window; `decide.scheduling_input()` — the pure
snapshot → `SchedulingInput` adapter; `launcher.Launcher.launch()` — one `NewNode` → instance
+ Node (also used by deprovisioning for replacements); `nodes.node_object()` — the Node we
create; `counter.CounterController` (job `counter`) — provisioner `status.resources`.
"""
