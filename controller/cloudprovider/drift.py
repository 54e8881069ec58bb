"""Drift as a structured value, and the cloud's own drift checks (spec §6.5).

Pure. A `Drift` says why a node no longer matches what its Provisioner and AWSNodeTemplate
would launch now: a `reason` named as Karpenter v0.31 names its drift reasons (so logs and
metrics read the same) and a short `message` for people ("AMI ami-0a… is no longer selected").
The dashboard and the decision log read the fields, never parse the text.

The checks here compare an instance with what its AWSNodeTemplate selects *now* — the dynamic
fields Karpenter's `CloudProvider.IsDrifted` covers: the AMI (`ami_drift`: the AMI the template
would pick for this instance type), the subnet (`subnet_drift`) and the security groups
(`security_group_drift`). Both providers' `is_drifted()` use them; the static checks (hashes,
requirements) live in `controller/deprovisioning/drift.py`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum


class DriftReason(StrEnum):
    """Karpenter v0.31's drift reasons (core `nodeclaim/disruption/drift.go`, aws `cloudprovider/drift.go`)."""

    PROVISIONER = "ProvisionerDrifted"
    REQUIREMENTS = "RequirementsDrifted"
    NODE_TEMPLATE = "NodeTemplateDrift"
    AMI = "AMIDrift"
    SUBNET = "SubnetDrift"
    SECURITY_GROUP = "SecurityGroupDrift"


@dataclass(frozen=True, slots=True)
class Drift:
    reason: DriftReason
    message: str

    def to_json(self) -> dict[str, str]:
        return {"reason": str(self.reason), "message": self.message}

    def __str__(self) -> str:
        return self.message


def ami_drift(instance_ami: str, selected: str | None, template: str) -> Drift | None:
    """Drifted when the instance's AMI is not the one `template` selects now for its type.

    `selected` None means the template selects no AMI for this type any more: drifted too."""
    if not instance_ami or instance_ami == selected:
        return None
    now = f" (now {selected})" if selected else ""
    return Drift(DriftReason.AMI, f"AMI {instance_ami} is no longer selected by AWSNodeTemplate {template}{now}")


def subnet_drift(instance_subnet: str, selected: Collection[str], template: str) -> Drift | None:
    if not instance_subnet or instance_subnet in selected:
        return None
    return Drift(DriftReason.SUBNET, f"subnet {instance_subnet} is no longer selected by AWSNodeTemplate {template}")


def security_group_drift(instance_groups: Collection[str], selected: Collection[str], template: str) -> Drift | None:
    """Drifted when the instance's groups differ from the selected set (either way, as Karpenter).

    An instance that reports no group is not judged (EC2 gives every VPC instance at least one;
    moto's CreateFleet reports none), as an instance without a recorded AMI or subnet is not."""
    if not instance_groups or set(instance_groups) == set(selected):
        return None
    have, want = ", ".join(sorted(instance_groups)) or "none", ", ".join(sorted(selected)) or "none"
    return Drift(
        DriftReason.SECURITY_GROUP,
        f"security groups {have} differ from those AWSNodeTemplate {template} selects ({want})",
    )
