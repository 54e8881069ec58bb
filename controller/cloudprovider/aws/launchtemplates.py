"""Launch templates karpy generates: one per distinct configuration (spec §5.9 step 7).

`launch_template_data(...)` (pure) is the EC2 `LaunchTemplateData`: AMI, user data (base64),
security groups, instance profile, block device mappings (sizes rounded up to GiB), metadata
options (IMDSv2 required, hop limit 2 by default), detailed monitoring. Its name is
`karpy/<hash of the data>`, so equal configurations share one template. `LaunchTemplates`
keeps the ones in use: `ensure()` describes or creates (tagged with the cluster and karpy's
ownership tag), `hydrate()` re-discovers karpy's templates of the cluster at start, `cleanup()`
deletes those unused for `ttl`. Karpenter tags its templates `karpenter.k8s.aws/cluster` too
(named `karpenter.k8s.aws/<hash>`): only a `karpy/` template carrying karpy's ownership tag is
ever hydrated, and only those are ever deleted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock
from controller.cloudprovider.aws.amifamily import block_devices, volume_gib
from controller.cloudprovider.aws.api import AWSApi, AWSError
from controller.cloudprovider.aws.fleet import OWNERSHIP_TAG

log = logging.getLogger(__name__)

CLUSTER_TAG = "karpenter.k8s.aws/cluster"
NAME_PREFIX = "karpy/"
UNUSED_SECONDS = 300.0
DEFAULT_METADATA = {
    "HttpEndpoint": "enabled",
    "HttpProtocolIpv6": "disabled",
    "HttpPutResponseHopLimit": 2,
    "HttpTokens": "required",
}


def _ebs(ebs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ours, theirs in (
        ("deleteOnTermination", "DeleteOnTermination"),
        ("encrypted", "Encrypted"),
        ("iops", "Iops"),
        ("kmsKeyID", "KmsKeyId"),
        ("snapshotID", "SnapshotId"),
        ("throughput", "Throughput"),
        ("volumeType", "VolumeType"),
    ):
        if ebs.get(ours) is not None:
            out[theirs] = ebs[ours]
    return out


def block_device_mappings(template: AWSNodeTemplate) -> list[dict[str, Any]]:
    out = []
    for mapping in block_devices(template):
        ebs = _ebs(mapping.get("ebs") or {})
        size = volume_gib(mapping)
        if size is not None:
            ebs["VolumeSize"] = size
        out.append({"DeviceName": mapping["deviceName"], "Ebs": ebs})
    return out


def metadata_options(template: AWSNodeTemplate) -> dict[str, Any]:
    given = template.metadata_options
    if given is None:
        return dict(DEFAULT_METADATA)
    out = dict(DEFAULT_METADATA)
    for ours, theirs in (
        ("httpEndpoint", "HttpEndpoint"),
        ("httpProtocolIPv6", "HttpProtocolIpv6"),
        ("httpPutResponseHopLimit", "HttpPutResponseHopLimit"),
        ("httpTokens", "HttpTokens"),
    ):
        if given.get(ours) is not None:
            out[theirs] = given[ours]
    return out


def launch_template_data(
    template: AWSNodeTemplate,
    ami: str,
    security_groups: Sequence[str],
    user_data: str,
    instance_profile: str | None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ImageId": ami,
        "SecurityGroupIds": sorted(security_groups),
        "UserData": base64.b64encode(user_data.encode()).decode(),
        "MetadataOptions": metadata_options(template),
        "Monitoring": {"Enabled": template.detailed_monitoring},
    }
    mappings = block_device_mappings(template)
    if mappings:
        data["BlockDeviceMappings"] = mappings
    if instance_profile:
        data["IamInstanceProfile"] = {"Name": instance_profile}
    return data


def template_name(data: Mapping[str, Any], tags: Mapping[str, str]) -> str:
    digest = hashlib.sha256(json.dumps([data, dict(sorted(tags.items()))], sort_keys=True).encode()).hexdigest()
    return NAME_PREFIX + digest[:20]


class LaunchTemplates:
    def __init__(
        self,
        api: AWSApi,
        clock: Clock,
        cluster: str,
        ownership_tag: str = OWNERSHIP_TAG,
        ttl: float = UNUSED_SECONDS,
    ) -> None:
        self._api, self._clock, self._cluster, self._ttl = api, clock, cluster, ttl
        self._ownership_tag = ownership_tag
        self._used: dict[str, float] = {}  # name → last used (karpy's templates only)
        self._lock = threading.Lock()

    def reconfigure(self, cluster: str, ownership_tag: str, ttl: float) -> None:
        """A new cluster name or ownership tag: templates found under the old ones are forgotten
        (no longer provably karpy's for this cluster), so they are never deleted."""
        with self._lock:
            if (cluster, ownership_tag) != (self._cluster, self._ownership_tag):
                self._used.clear()
            self._cluster, self._ownership_tag, self._ttl = cluster, ownership_tag, ttl

    def known(self) -> list[str]:
        with self._lock:
            return sorted(self._used)

    def hydrate(self) -> int:
        found = self._api.pages(
            "ec2",
            "describe_launch_templates",
            "LaunchTemplates",
            f"cluster {self._cluster}",
            Filters=[{"Name": f"tag:{self._ownership_tag}", "Values": [self._cluster]}],
        )
        mine = [lt["LaunchTemplateName"] for lt in found if self._ours(lt)]
        now = self._clock.now()
        with self._lock:
            for name in mine:
                self._used.setdefault(name, now)
        return len(mine)

    def _ours(self, lt: Mapping[str, Any]) -> bool:
        tags = {t["Key"]: t["Value"] for t in lt.get("Tags") or []}
        return str(lt.get("LaunchTemplateName", "")).startswith(NAME_PREFIX) and (
            tags.get(self._ownership_tag) == self._cluster
        )

    def ensure(self, data: Mapping[str, Any], tags: Mapping[str, str]) -> str:
        name = template_name(data, tags)
        now = self._clock.now()
        with self._lock:
            if name in self._used:
                self._used[name] = now
                return name
        try:
            self._api.call("ec2", "describe_launch_templates", name, LaunchTemplateNames=[name])
        except AWSError as err:
            if "NotFound" not in err.code:
                raise
            owned = {**tags, CLUSTER_TAG: self._cluster, self._ownership_tag: self._cluster}
            lt_tags = [{"Key": k, "Value": v} for k, v in sorted(owned.items())]
            try:
                self._api.call(
                    "ec2",
                    "create_launch_template",
                    name,
                    LaunchTemplateName=name,
                    LaunchTemplateData=dict(data),
                    TagSpecifications=[{"ResourceType": "launch-template", "Tags": lt_tags}],
                )
                log.info("created launch template %s", name)
            except AWSError as created:
                if "AlreadyExists" not in created.code:  # a concurrent launch made it first: the same one
                    raise
        with self._lock:
            self._used[name] = now
        return name

    def forget(self, name: str) -> None:
        """A launch failed with "launch template not found": describe or create it again next time."""
        with self._lock:
            self._used.pop(name, None)

    def cleanup(self) -> list[str]:
        """Delete the templates unused for `ttl` (ones in use by instances stay valid for them)."""
        now = self._clock.now()
        with self._lock:
            stale = [n for n, used in self._used.items() if now - used >= self._ttl and n.startswith(NAME_PREFIX)]
        deleted = []
        for name in stale:
            try:
                self._api.call("ec2", "delete_launch_template", name, LaunchTemplateName=name)
            except AWSError as err:
                if "NotFound" not in err.code:
                    log.warning("deleting launch template %s: %s", name, err)
                    continue
            with self._lock:
                if self._used.get(name, now) <= now - self._ttl:
                    self._used.pop(name, None)
            deleted.append(name)
        return deleted
