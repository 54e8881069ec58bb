"""The simulated cloud's AMIs: which images an AWSNodeTemplate selects (spec §1.3, §5.9).

Pure over the store's images and releases (`store.py`), answering as EC2 would, so AMI drift is
testable without an account:

- `amiSelector` with `aws-ids` → those AMIs (a registered image gives its architecture; an id
  nobody registered fits both architectures, the simulated cloud boots anything);
- any other `amiSelector` → the registered images whose tags match every `key: v1,v2` (`*`: the
  tag exists; `aws::name`: the image name; `aws::owners` is ignored), the newest per
  architecture and well-known-label tag set, as the AWS resolver picks;
- no selector → the family's current release per architecture (`publish_release`), or before
  any release a fixed id derived from the family and architecture (`default_image_id`).
  `Custom` needs a selector.

The result is the AWS resolver's `Ami` list, so both providers pick an instance type's AMI with
the same `ami_for`. An empty selection raises `ResolutionError` naming the selector.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.cloudprovider.aws.amifamily import AL2, CUSTOM
from controller.cloudprovider.aws.resolver import Ami, ResolutionError
from controller.cloudprovider.simulated.store import Image
from controller.core.labels import WELL_KNOWN_LABELS

ARCHITECTURES = ("amd64", "arm64")


def default_image_id(family: str, arch: str) -> str:
    """The AMI a family names for an architecture until a release is published."""
    return "ami-" + hashlib.sha256(f"simulated/{family}/{arch}".encode()).hexdigest()[:17]


def _ami(image: Image) -> Ami:
    labels = tuple(sorted((k, v) for k, v in image.tags.items() if k in WELL_KNOWN_LABELS))
    return Ami(image.image_id, image.arch, None, str(image.created_at), image.name, labels)


def _matches(image: Image, selector: Mapping[str, str]) -> bool:
    for key, raw in selector.items():
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if key in ("aws-ids", "aws::ids"):
            if image.image_id not in values:
                return False
        elif key == "aws::owners":
            continue
        elif key == "aws::name":
            if image.name not in values:
                return False
        elif raw == "*":
            if key not in image.tags:
                return False
        elif image.tags.get(key) not in values:
            return False
    return True


def _by_selector(selector: Mapping[str, str], images: Sequence[Image]) -> list[Ami]:
    ids = [v.strip() for k, raw in selector.items() if k in ("aws-ids", "aws::ids") for v in raw.split(",")]
    ids = [i for i in ids if i]
    known = {i.image_id: i for i in images}
    if ids and len(selector) == 1:
        out: list[Ami] = []
        for image_id in ids:
            image = known.get(image_id)
            out += [_ami(image)] if image else [Ami(image_id, arch, None) for arch in ARCHITECTURES]
        return out
    found = sorted((_ami(i) for i in images if _matches(i, selector)), key=lambda a: (a.created, a.id), reverse=True)
    newest: dict[tuple[str, tuple[tuple[str, str], ...]], Ami] = {}
    for ami in found:
        newest.setdefault((ami.arch, ami.labels), ami)
    return [a for a in found if newest[(a.arch, a.labels)] is a]


def resolve_amis(
    template: AWSNodeTemplate | None, images: Sequence[Image], releases: Mapping[tuple[str, str], str]
) -> list[Ami]:
    """The AMIs `template` selects now, newest first (see the module docstring)."""
    if template is not None and template.ami_selector:
        amis = _by_selector(template.ami_selector, images)
        what = f"amiSelector {template.ami_selector}"
    elif template is not None and template.ami_family == CUSTOM:
        raise ResolutionError(f"AWSNodeTemplate {template.name}: amiFamily Custom needs an amiSelector")
    else:
        family = template.ami_family if template is not None else AL2
        amis = [Ami(releases.get((family, a)) or default_image_id(family, a), a, None) for a in ARCHITECTURES]
        what = f"the {family} releases"
    if not amis:
        name = template.name if template is not None else ""
        raise ResolutionError(f"no amis exist given constraints: {what} (AWSNodeTemplate {name})")
    return amis
