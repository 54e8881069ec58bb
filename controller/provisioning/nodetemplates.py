"""Which AWSNodeTemplate each Provisioner uses, and the instance types it sees through it.

Pure over a snapshot plus the cloud provider's `get_instance_types(provisioner, node_template)`
(which applies the provisioner's kubelet settings and the template's AMI family and block
devices: the scheduler itself computes no capacity). Shared by provisioning (new nodes) and
deprovisioning (replacements), so both see the same resolved template. A Provisioner whose
template is missing (or whose types cannot be listed, e.g. its subnet selector matches nothing)
gets no instance types and a message naming the cause: its pods stay pending with that message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from controller.apis.awsnodetemplate import AWSNodeTemplate, NodeTemplateNotFoundError, resolve_node_template
from controller.cloudprovider.base import CloudProvider
from controller.cloudprovider.errors import CloudProviderError
from controller.scheduling.types import InstanceType
from controller.state.snapshot import ProvisionerView, Snapshot

log = logging.getLogger(__name__)


@dataclass
class ProvisionerTypes:
    types: dict[str, tuple[InstanceType, ...]] = field(default_factory=dict)
    templates: dict[str, AWSNodeTemplate | None] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # provisioner → why it has no types


def node_template(view: ProvisionerView, snap: Snapshot, cloud: CloudProvider) -> AWSNodeTemplate | None:
    """The template of one provisioner (raises NodeTemplateNotFoundError)."""
    prov = view.provisioner
    ref = prov.provider_ref_name if prov is not None else None
    inline = prov.provider if prov is not None else None
    default = getattr(cloud, "default_node_template", None)
    return resolve_node_template(view.name, ref, inline, snap.awsnodetemplates, default)


def instance_types_for(snap: Snapshot, cloud: CloudProvider) -> ProvisionerTypes:
    out = ProvisionerTypes()
    for name, view in sorted(snap.provisioners.items()):
        if view.spec is None:
            continue
        try:
            template = node_template(view, snap, cloud)
        except NodeTemplateNotFoundError as err:
            out.types[name] = ()
            out.missing[name] = str(err)
            continue
        out.templates[name] = template
        try:
            out.types[name] = cloud.get_instance_types(view.spec, template)
        except CloudProviderError as err:  # e.g. the template's subnets match nothing
            log.warning("instance types for provisioner %s: %s", name, err)
            out.types[name] = ()
            out.missing[name] = f"provisioner {name}: {err}"
    return out
