"""The cloud's drift checks: AMI, subnet and security groups against what the template selects."""

from __future__ import annotations

from controller.cloudprovider.drift import DriftReason, ami_drift, security_group_drift, subnet_drift


def test_ami_drift() -> None:
    assert ami_drift("ami-1", "ami-1", "default") is None
    drift = ami_drift("ami-1", "ami-2", "default")
    assert drift is not None and drift.reason is DriftReason.AMI
    assert drift.message == "AMI ami-1 is no longer selected by AWSNodeTemplate default (now ami-2)"
    assert drift.to_json() == {"reason": "AMIDrift", "message": drift.message}
    gone = ami_drift("ami-1", None, "default")
    assert gone is not None and gone.message == "AMI ami-1 is no longer selected by AWSNodeTemplate default"
    assert ami_drift("", "ami-2", "default") is None  # launched before AMIs were recorded: unknown


def test_subnet_drift() -> None:
    assert subnet_drift("subnet-a", ["subnet-a", "subnet-b"], "t") is None
    drift = subnet_drift("subnet-c", ["subnet-a"], "t")
    assert drift is not None and drift.reason is DriftReason.SUBNET and "subnet-c" in drift.message


def test_security_groups_must_match_exactly() -> None:
    assert security_group_drift(["sg-2", "sg-1"], ["sg-1", "sg-2"], "t") is None
    added = security_group_drift(["sg-1"], ["sg-1", "sg-2"], "t")
    assert added is not None and added.reason is DriftReason.SECURITY_GROUP
    assert added.message == "security groups sg-1 differ from those AWSNodeTemplate t selects (sg-1, sg-2)"
    assert security_group_drift(["sg-1", "sg-2"], ["sg-1"], "t") is not None
    assert security_group_drift([], ["sg-1"], "t") is None  # reported none: not judged
