"""The one set of test object builders, with defaults, by what they build.

- `wire` — Kubernetes objects as the API server serves them (Pod, Node, Provisioner, PDB dicts),
  for anything that reads the cluster: state, the controllers, FakeKube.
- `scheduling` — the scheduler's typed inputs (`InstanceType`, `ProvisionerSpec`, `PodRequest`,
  `StateNode`), built through the same parsers users' documents go through, plus `run()` and
  readable expectations.
- `deprovisioning` — a deprovisioning pass's `Inputs`: cluster state's own views (`NodeView`,
  `PodView`, `PdbView`, `ProvisionerView`), on the scheduling builders' instance types.
"""
