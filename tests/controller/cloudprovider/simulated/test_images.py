"""The simulated cloud's AMI selection: ids, tags, names, and the family releases."""

from __future__ import annotations

from typing import Any

import pytest

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.aws.resolver import ResolutionError, ami_for
from controller.cloudprovider.simulated.images import default_image_id, resolve_amis
from controller.cloudprovider.simulated.store import Image

IMAGES = [
    Image("ami-old", "eks-1", "amd64", {"team": "a"}, created_at=1.0),
    Image("ami-new", "eks-2", "amd64", {"team": "a"}, created_at=2.0),
    Image("ami-arm", "eks-arm", "arm64", {"team": "a"}, created_at=1.0),
    Image("ami-other", "other", "amd64", {"team": "b"}, created_at=3.0),
]


def template(**spec: Any) -> AWSNodeTemplate:
    return AWSNodeTemplate.from_wire({"metadata": {"name": "t"}, "spec": {"subnetSelector": {"a": "b"}, **spec}})


def ids(tmpl: AWSNodeTemplate | None, releases: dict[tuple[str, str], str] | None = None) -> list[tuple[str, str]]:
    return [(a.id, a.arch) for a in resolve_amis(tmpl, IMAGES, releases or {})]


def test_ids_select_those_images_known_or_not() -> None:
    assert ids(template(amiSelector={"aws-ids": "ami-arm, ami-x"})) == [
        ("ami-arm", "arm64"),
        ("ami-x", "amd64"),
        ("ami-x", "arm64"),
    ]


def test_tags_select_the_newest_image_per_architecture() -> None:
    assert ids(template(amiSelector={"team": "a"})) == [("ami-new", "amd64"), ("ami-arm", "arm64")]
    assert ids(template(amiSelector={"team": "*"})) == [("ami-other", "amd64"), ("ami-arm", "arm64")]
    assert ids(template(amiSelector={"aws::name": "eks-1"})) == [("ami-old", "amd64")]


def test_without_selector_the_family_release_or_its_default() -> None:
    assert ids(None) == [(default_image_id("AL2", "amd64"), "amd64"), (default_image_id("AL2", "arm64"), "arm64")]
    released = ids(template(amiFamily="Bottlerocket"), {("Bottlerocket", "amd64"): "ami-br"})
    assert released == [("ami-br", "amd64"), (default_image_id("Bottlerocket", "arm64"), "arm64")]
    assert default_image_id("AL2", "amd64") != default_image_id("Bottlerocket", "amd64")


def test_nothing_selected_is_an_error_naming_the_selector() -> None:
    with pytest.raises(ResolutionError, match="amiSelector"):
        resolve_amis(template(amiSelector={"team": "nobody"}), IMAGES, {})
    with pytest.raises(ResolutionError, match="Custom"):
        resolve_amis(template(amiFamily="Custom"), IMAGES, {})


def test_an_instance_type_gets_the_image_of_its_architecture() -> None:
    amis = resolve_amis(template(amiSelector={"team": "a"}), IMAGES, {})
    arm = ami_for(amis, {"kubernetes.io/arch": "arm64"}, False)
    assert arm is not None and arm.id == "ami-arm"
