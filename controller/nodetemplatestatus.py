"""`NodeTemplateStatusController` (`awsnodetemplate.status`): each AWSNodeTemplate's status.

`reconcile()` (job every 10 s, AWS only) asks the cloud provider what each node template resolves
to now (`template_status`: subnets with their zones, security groups, AMIs with their
requirements — Karpenter v0.31's status fields) and writes it on the status subresource, with a
`Ready` condition (karpy's addition, shown by `kubectl get awsnodetemplates`): `False` with
reason `InvalidSpec` when the spec does not load, `ResolutionFailed` naming every problem (no
subnet, security group or AMI selected; no instance profile, so a node would never join), else
`True`. The patch is sent only when something changed; `lastTransitionTime` moves only when the
condition's status flips. A cloud that cannot be asked leaves the status as it is.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.errors import CloudProviderError
from controller.core.timestamps import format_timestamp
from controller.kube.client import Kube
from controller.kube.errors import KubeError, NotFoundError
from controller.kube.resources import AWSNODETEMPLATES
from controller.state.cluster import ClusterState

log = logging.getLogger(__name__)


class ResolvesTemplates(Protocol):
    def template_status(self, template: AWSNodeTemplate) -> dict[str, Any]: ...


def desired_status(obj: dict[str, Any], resolved: dict[str, Any] | None, error: str, now: float) -> dict[str, Any]:
    """The status the object should carry (pure): `resolved` from the cloud, or `error` when the
    spec does not load."""
    out: dict[str, Any] = {}
    if resolved is not None:
        out = {k: resolved[k] for k in ("subnets", "securityGroups", "amis") if resolved.get(k)}
    problems = list(resolved.get("problems") or []) if resolved is not None else []
    if error:
        status, reason, message = "False", "InvalidSpec", error
    elif problems:
        status, reason, message = "False", "ResolutionFailed", "; ".join(problems)
    else:
        status, reason, message = "True", "Ready", ""
    conditions = (obj.get("status") or {}).get("conditions") or []
    current: dict[str, Any] = next((c for c in conditions if c.get("type") == "Ready"), {})
    since = current.get("lastTransitionTime") if current.get("status") == status else None
    condition = {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "lastTransitionTime": since or format_timestamp(now),
    }
    if message:
        condition["message"] = message[:1024]
    out["conditions"] = [condition]
    return out


class NodeTemplateStatusController:
    name = "awsnodetemplate.status"

    def __init__(self, state: ClusterState, kube: Kube, cloud: ResolvesTemplates) -> None:
        self.state, self.kube, self.cloud = state, kube, cloud

    def reconcile(self) -> list[str]:
        """The node templates whose status was written."""
        snap = self.state.snapshot()
        if not snap.synced:
            return []
        written = []
        for name, obj in sorted(snap.awsnodetemplates.items()):
            resolved: dict[str, Any] | None = None
            error = ""
            try:
                template = AWSNodeTemplate.from_wire(obj)
            except (ValueError, TypeError, KeyError) as err:
                error = f"the spec could not be read: {err}"
            else:
                try:
                    resolved = self.cloud.template_status(template)
                except CloudProviderError as err:
                    log.warning("resolving awsnodetemplate %s: %s", name, err)
                    continue
            status = desired_status(dict(obj), resolved, error, snap.now)
            if status == (obj.get("status") or {}):
                continue
            try:
                self.kube.patch(AWSNODETEMPLATES, name, {"status": status}, subresource="status")
            except NotFoundError:
                continue
            except KubeError as err:
                log.warning("writing awsnodetemplate %s status: %s", name, err)
                continue
            written.append(name)
        return written
