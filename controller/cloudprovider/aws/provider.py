"""`AWSCloudProvider`: the `CloudProvider` protocol on EC2, through the `AWSApi` adapter.

Catalog (`get_instance_types`): `DescribeInstanceTypes` (hvm, x86_64/arm64) and
`DescribeInstanceTypeOfferings` per zone, loaded by `refresh()` (the background job; 5 min) and
never listed on the hot path; restricted to the zones of the node template's subnets; priced by
`pricing.Prices` (refreshed every 12 h); ICE-cached offerings unavailable; shaped per provisioner
and node template (`shaping.for_provisioner`).

Launch (`create`, spec §5.9): the plan of `fleet.py` (types, capacity type, subnets, overrides),
one launch template per AMI (`launchtemplates.py`), one `CreateFleet` — shared with the
identical requests of concurrent launches (`batching.py`: one call asks for all of them, each
caller gets one instance or, when EC2 launched fewer, an insufficient-capacity error; an
instance that cannot be handed over is terminated again). DescribeInstances by ID and
TerminateInstances are batched the same way. Errors `InsufficientInstanceCapacity`,
`MaxSpotInstanceCountExceeded`, `VcpuLimitExceeded`, `UnfulfillableCapacity`, `Unsupported`
put (type, zone, capacity type) in the ICE cache and the launch falls back (other types, then
on-demand) within the same call. Instances are tagged `Name`, `karpenter.sh/provisioner-name`,
`karpenter.sh/discovery`, `kubernetes.io/cluster/<cluster>=owned`, plus the template's tags.
Provider IDs are `aws:///<zone>/<instance-id>`; the node name is the private DNS name.

Drift (`is_drifted`, spec §6.5): the instance as DescribeInstances reports it against what its
node template selects now — the AMI the resolver picks for its type, the subnets and the
security groups (`cloudprovider/drift.py`); a template with `launchTemplate` drifts by subnet only.

Ownership (issue 19): Karpenter v0.31 puts the same Karpenter tags on *its* instances, so karpy
also tags what it launches (instances, volumes, fleets, launch templates) with its ownership tag
(`AWSSettings.ownership_tag`, default `karpy.sh/managed-by`, value the cluster name). `list()`,
`get()`, `has_seen()` (garbage collection's and interruption handling's proof) and launch
template hydration and cleanup only ever see resources carrying it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock
from controller.cloudprovider.aws.amifamily import family_of
from controller.cloudprovider.aws.api import AWSApi, AWSError
from controller.cloudprovider.aws.batching import EC2Batchers
from controller.cloudprovider.aws.fleet import ICE_CODES, OWNERSHIP_TAG, Plan, fleet_request, instance_tags, plan_launch
from controller.cloudprovider.aws.instancetypes import GPU_RESOURCES, NEURON, instance_type, usable
from controller.cloudprovider.aws.launchtemplates import UNUSED_SECONDS, LaunchTemplates, launch_template_data
from controller.cloudprovider.aws.metrics import record_instance_types, record_prices
from controller.cloudprovider.aws.overhead import VM_MEMORY_OVERHEAD_PERCENT
from controller.cloudprovider.aws.pricing import Prices
from controller.cloudprovider.aws.resolver import ResolutionError, Resolver, ami_for
from controller.cloudprovider.aws.shaping import for_provisioner
from controller.cloudprovider.aws.userdata import Bootstrap, node_labels, user_data
from controller.cloudprovider.base import Instance, NodeRequest, UnavailableOfferings
from controller.cloudprovider.drift import Drift, ami_drift, security_group_drift, subnet_drift
from controller.cloudprovider.errors import CloudProviderError, InsufficientCapacityError, NodeNotFoundError
from controller.core import labels as L
from controller.scheduling.types import InstanceType, KubeletSpec, ProvisionerSpec
from controller.settings import Settings

log = logging.getLogger(__name__)

SCHEME = "aws://"
DEFAULT_KUBERNETES_VERSION = "1.27"  # when neither set nor discovered
TYPES_TTL = 300.0
PRICES_TTL = 12 * 3600.0
LIVE_STATES = ("pending", "running", "stopping", "stopped")


@dataclass(frozen=True)
class AWSSettings:
    region: str
    cluster_name: str
    cluster_endpoint: str = ""
    cluster_ca_bundle: str = ""  # base64 PEM for the node bootstrap
    cluster_dns_ip: str = ""
    kubernetes_version: str = "1.27"  # DEFAULT_KUBERNETES_VERSION
    default_instance_profile: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    node_label: str = ""  # "key=value" every launched node carries (the local kwok manages these)
    node_name_convention: str = "ip-name"  # or resource-name
    eni_limited_pod_density: bool = True
    isolated_vpc: bool = False  # no pricing API
    ownership_tag: str = OWNERSHIP_TAG  # key of the tag (value: cluster_name) on everything karpy creates
    launch_template_ttl: float = UNUSED_SECONDS  # a launch template unused this long is deleted
    vm_memory_overhead_percent: float = VM_MEMORY_OVERHEAD_PERCENT
    enable_pod_eni: bool = False  # aws.enablePodENI: vpc.amazonaws.com/pod-eni capacity

    @staticmethod
    def from_settings(settings: Settings, tags: Mapping[str, str]) -> AWSSettings:
        """The controller's settings (flags, environment, karpenter-global-settings) as the provider's."""
        return AWSSettings(
            region=settings.aws_region,
            cluster_name=settings.cluster_name,
            cluster_endpoint=settings.aws_cluster_endpoint,
            cluster_ca_bundle=settings.aws_cluster_ca_bundle,
            cluster_dns_ip=settings.aws_cluster_dns_ip,
            kubernetes_version=settings.aws_kubernetes_version or DEFAULT_KUBERNETES_VERSION,
            default_instance_profile=settings.aws_default_instance_profile,
            tags=tags,
            node_label=settings.aws_node_label,
            node_name_convention=settings.aws_node_name_convention,
            eni_limited_pod_density=settings.aws_enable_eni_limited_pod_density,
            isolated_vpc=settings.aws_isolated_vpc,
            ownership_tag=settings.aws_ownership_tag,
            launch_template_ttl=settings.aws_launch_template_ttl_seconds,
            vm_memory_overhead_percent=settings.aws_vm_memory_overhead_percent,
            enable_pod_eni=settings.aws_enable_pod_eni,
        )


def provider_id(zone: str, instance_id: str) -> str:
    return f"{SCHEME}/{zone}/{instance_id}"


def instance_id_of(pid: str) -> str:
    if not pid.startswith(SCHEME + "/") or not pid.rsplit("/", 1)[-1].startswith("i-"):
        raise NodeNotFoundError(f"not an aws provider id: {pid!r}")
    return pid.rsplit("/", 1)[-1]


@dataclass
class _Catalog:
    infos: list[dict[str, Any]]
    zones_by_type: dict[str, frozenset[str]]
    loaded_at: float


class AWSCloudProvider:
    name = "aws"
    default_node_template: str | None = "default"

    def __init__(
        self,
        api: AWSApi,
        settings: AWSSettings,
        clock: Clock,
        prices: Prices | None = None,
        ice_ttl: float = 45.0,
        sleep: Callable[[float], None] = time.sleep,
        batchers: EC2Batchers | None = None,
    ) -> None:
        self.api = api
        self.batchers = batchers or EC2Batchers(api)
        self.settings = settings
        self._clock = clock
        self._sleep = sleep
        self.prices = prices or Prices(settings.region)
        self.unavailable = UnavailableOfferings(clock, ice_ttl)
        self.resolver = Resolver(api, clock, settings.kubernetes_version)
        self.launch_templates = LaunchTemplates(
            api, clock, settings.cluster_name, settings.ownership_tag, settings.launch_template_ttl
        )
        self._catalog: _Catalog | None = None
        self._prices_at: float | None = None
        self._built: dict[tuple[Any, ...], tuple[InstanceType, ...]] = {}
        self._shaped: list[tuple[tuple[Any, ...], Any, Any, tuple[InstanceType, ...]]] = []
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._foreign: set[str] = set()  # instance IDs seen without karpy's ownership tag

    def reconfigure(self, settings: AWSSettings) -> None:
        """New settings at run time (karpenter-global-settings changed): later launches, lists and
        cleanups use them; the shaped catalogs are rebuilt (overheads and pod density may move)."""
        if settings.region != self.settings.region:
            log.warning("the region cannot change at run time (staying in %s)", self.settings.region)
            settings = replace(settings, region=self.settings.region)
        with self._lock:
            self.settings = settings
            self._shaped.clear()
            self._foreign.clear()
        self.resolver.kubernetes_version = settings.kubernetes_version
        self.launch_templates.reconfigure(settings.cluster_name, settings.ownership_tag, settings.launch_template_ttl)

    def template_status(self, template: AWSNodeTemplate) -> dict[str, Any]:
        """What the node template resolves to now, as Karpenter v0.31 writes it in the
        AWSNodeTemplate's status (`subnets` with zones, `securityGroups`, `amis` with their
        requirements), plus `problems`: why a node of it could not launch or join (nothing
        selected, or no instance profile). Raises `CloudProviderError` when EC2 cannot be asked."""
        out: dict[str, Any] = {"subnets": [], "securityGroups": [], "amis": [], "problems": []}
        try:
            out["subnets"] = [
                {"id": s.id, "zone": s.zone} for s in sorted(self.resolver.subnets(template), key=lambda s: s.id)
            ]
        except ResolutionError as err:
            out["problems"].append(str(err))
        if not template.launch_template:
            try:
                groups = self.resolver.security_groups(template)
                out["securityGroups"] = [{"id": g} for g in groups]
                if not groups:
                    out["problems"].append(f"no security groups matched selector {template.security_group_selector}")
            except ResolutionError as err:
                out["problems"].append(str(err))
            try:
                out["amis"] = [
                    {"id": a.id, "name": a.name,
                     "requirements": [{"key": L.ARCH, "operator": "In", "values": [a.arch]}]}
                    for a in sorted(self.resolver.amis(template), key=lambda a: (a.arch, a.id))
                ]  # fmt: skip
            except ResolutionError as err:
                out["problems"].append(str(err))
            if not (template.instance_profile or self.settings.default_instance_profile):
                out["problems"].append(
                    "no instance profile: set spec.instanceProfile or aws.defaultInstanceProfile "
                    "(a node without one never joins the cluster)"
                )
        return out

    def describe_cluster(self, cluster_name: str) -> tuple[str, str]:
        """(endpoint, base64 CA) from EKS `DescribeCluster`, as Karpenter v0.31 finds the cluster
        endpoint when `aws.clusterEndpoint` is unset; ("", "") when EKS does not know the cluster."""
        try:
            answer = self.api.call("eks", "describe_cluster", cluster_name, name=cluster_name)
        except AWSError as err:
            log.warning("discovering the cluster endpoint: %s", err)
            return "", ""
        cluster = answer.get("cluster") or {}
        return str(cluster.get("endpoint") or ""), str((cluster.get("certificateAuthority") or {}).get("data") or "")

    # Background refresh ---------------------------------------------------------------------

    def check_access(self) -> str:
        """A `DryRun` of DescribeInstanceTypes: "" when EC2 answers that the call would succeed
        (`DryRunOperation`, or a plain answer from endpoints that ignore DryRun), else why not
        (e.g. missing credentials or permissions), for a clear log line at start."""
        try:
            self.api.call("ec2", "describe_instance_types", "connectivity check", DryRun=True, MaxResults=5)
        except AWSError as err:
            if err.code == "DryRunOperation":
                return ""
            return str(err)
        return ""

    def refresh(self, force: bool = False) -> None:
        """Reload what is stale: instance types and offerings (5 min), prices (12 h), unused
        launch templates. The `aws.refresh` job calls this; errors are logged, the old data stays."""
        with self._refresh_lock:
            now = self._clock.now()
            if force or self._catalog is None or now - self._catalog.loaded_at >= TYPES_TTL:
                self._load_catalog()
            if force or self._prices_at is None or now - self._prices_at >= PRICES_TTL:
                self._prices_at = now
                self._refresh_prices()
                record_prices(self.settings.region, self.prices.estimates())
            self.launch_templates.cleanup()

    def _load_catalog(self) -> None:
        infos = self.api.pages(
            "ec2",
            "describe_instance_types",
            "InstanceTypes",
            "hvm x86_64/arm64",
            Filters=[
                {"Name": "supported-virtualization-type", "Values": ["hvm"]},
                {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
            ],
        )
        offerings = self.api.pages(
            "ec2",
            "describe_instance_type_offerings",
            "InstanceTypeOfferings",
            self.settings.region,
            LocationType="availability-zone",
        )
        zones: dict[str, set[str]] = {}
        for o in offerings:
            zones.setdefault(o["InstanceType"], set()).add(o["Location"])
        catalog = _Catalog(
            [i for i in infos if usable(i)], {k: frozenset(v) for k, v in zones.items()}, self._clock.now()
        )
        with self._lock:
            self._catalog = catalog
            self._built.clear()
            self._shaped.clear()
        record_instance_types(catalog.infos)
        log.info("discovered %d instance types in %s", len(catalog.infos), self.settings.region)

    def _refresh_prices(self) -> None:
        try:
            self.prices.refresh_spot(self.api)
        except CloudProviderError as err:
            log.warning("refreshing spot prices: %s", err)
        if self.settings.isolated_vpc:
            return
        try:
            self.prices.refresh_on_demand(self.api)
        except CloudProviderError as err:
            log.warning("refreshing on-demand prices (keeping the price file's): %s", err)

    # Catalog -----------------------------------------------------------------------------------

    def _zones(self, node_template: AWSNodeTemplate | None) -> frozenset[str]:
        """The subnets' zones (every zone of the region without a template)."""
        if node_template is None:
            if self._catalog is None:
                self.refresh()
            return self._all_zones()
        return frozenset(s.zone for s in self.resolver.subnets(node_template))

    def _types(self, zones: frozenset[str]) -> tuple[InstanceType, ...]:
        if self._catalog is None:
            self.refresh()
        catalog = self._catalog
        assert catalog is not None
        version, unavailable = self.unavailable.snapshot()
        pod_eni = self.settings.enable_pod_eni
        key = (id(catalog), zones, version, self.prices.version, pod_eni)
        with self._lock:
            built = self._built.get(key)
        if built is None:
            out = []
            for info in catalog.infos:
                offered = catalog.zones_by_type.get(info["InstanceType"], frozenset()) & zones
                if offered:
                    out.append(instance_type(info, self.settings.region, offered, self.prices, unavailable, pod_eni))
            built = tuple(sorted(out, key=lambda it: it.name))
            with self._lock:
                if len(self._built) >= 8:  # stale versions
                    self._built.clear()
                    self._shaped.clear()
                self._built[key] = built
        return built

    def get_instance_types(
        self, provisioner: ProvisionerSpec | None = None, node_template: AWSNodeTemplate | None = None
    ) -> tuple[InstanceType, ...]:
        base = self._types(self._zones(node_template))
        kubelet = provisioner.kubelet if provisioner is not None else None
        if not self.settings.eni_limited_pod_density and (kubelet is None or kubelet.max_pods is None):
            kubelet = replace(kubelet or KubeletSpec(), max_pods=110)
        key = (id(base),)
        with self._lock:
            for k, kub, tmpl, types in self._shaped:
                if k == key and kub == kubelet and tmpl == node_template:
                    return types
        shaped = for_provisioner(base, kubelet, node_template, self.settings.vm_memory_overhead_percent)
        with self._lock:
            self._shaped.append((key, kubelet, node_template, shaped))
        return shaped

    # Launch ------------------------------------------------------------------------------------

    def create(self, request: NodeRequest) -> Instance:
        template = request.node_template
        if template is None:
            raise CloudProviderError(f"launching for provisioner {request.provisioner}: no AWSNodeTemplate")
        subnets = self.resolver.subnets(template)
        errors: list[str] = []
        tried: set[tuple[Any, ...]] = set()
        for _attempt in range(4):  # spot → other types → on-demand, within this one call
            _, unavailable = self.unavailable.snapshot()
            plan = plan_launch(request, subnets, unavailable)
            if plan is None or _offerings(plan) in tried:  # nothing new to try
                break
            tried.add(_offerings(plan))
            result = self._fleet(request, template, plan)
            if isinstance(result, Instance):
                return result
            errors += result
        detail = "; ".join(sorted(set(errors))) or "no offering of the requested types is available"
        raise InsufficientCapacityError(f"all requested instance types were unavailable during launch: {detail}")

    def _fleet(self, request: NodeRequest, template: AWSNodeTemplate, plan: Plan) -> Instance | list[str]:
        tags = instance_tags(
            self.settings.cluster_name, request.provisioner, self.settings.tags, template.tags,
            self.settings.ownership_tag,
        )  # fmt: skip
        configs: dict[str, list[dict[str, str]]] = {}
        by_override: dict[tuple[str, str], tuple[InstanceType, Any]] = {}
        if template.launch_template:
            names = {it.name: template.launch_template for it, _, _ in plan.overrides}
        else:
            names = self._launch_templates(request, template, plan, tags)
        for it, offering, subnet in plan.overrides:
            name = names.get(it.name)
            if name is None:
                continue
            configs.setdefault(name, []).append(
                {"InstanceType": it.name, "SubnetId": subnet.id, "AvailabilityZone": offering.zone}
            )
            by_override[(it.name, offering.zone)] = (it, offering)
        if not configs:
            raise CloudProviderError(
                f"launching for provisioner {request.provisioner}: no instance types satisfy requirements of amis"
            )
        params = fleet_request(plan.capacity_type, configs, tags, template.context)
        try:  # identical requests of concurrent launches share one CreateFleet (`batching.py`)
            answer = self.batchers.create_fleet(params)
        except AWSError as err:
            if "LaunchTemplate" in err.code and "NotFound" in err.code:
                for name in configs:
                    self.launch_templates.forget(name)
            raise
        ids = [i for group in answer.get("Instances") or [] for i in group.get("InstanceIds") or []]
        errors = []
        for error in answer.get("Errors") or []:
            code, message = str(error.get("ErrorCode", "")), str(error.get("ErrorMessage", ""))
            override = (error.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            if code in ICE_CODES and override.get("InstanceType"):
                self.unavailable.mark(
                    override["InstanceType"],
                    override.get("AvailabilityZone", ""),
                    error.get("Lifecycle") or plan.capacity_type,
                )
            elif code not in ICE_CODES and not ids:
                raise CloudProviderError(f"ec2 CreateFleet (provisioner {request.provisioner}): {code}: {message}")
            errors.append(f"{code}: {message}")
        if ids:  # ours now: returned to the caller, or terminated again
            try:
                return self._launched(ids[0], request, by_override, plan.capacity_type)
            except CloudProviderError:
                self._terminate_quietly(ids[0])
                raise
        if not errors:
            errors.append("CreateFleet returned no instance")
        return errors

    def _launch_templates(
        self, request: NodeRequest, template: AWSNodeTemplate, plan: Plan, tags: Mapping[str, str]
    ) -> dict[str, str]:
        family = family_of(template)
        amis = self.resolver.amis(template)
        groups = self.resolver.security_groups(template)
        profile = template.instance_profile or self.settings.default_instance_profile or None
        spec = request.spec
        max_pods = None
        if spec is not None and spec.kubelet is not None and spec.kubelet.max_pods is not None:
            max_pods = spec.kubelet.max_pods
        elif not self.settings.eni_limited_pod_density:
            max_pods = 110
        boot = Bootstrap(
            cluster_name=self.settings.cluster_name,
            endpoint=self.settings.cluster_endpoint,
            ca_bundle=self.settings.cluster_ca_bundle,
            dns_ip=self.settings.cluster_dns_ip,
            labels=node_labels(request.provisioner, spec.labels if spec else {}, plan.capacity_type),
            taints=(*spec.taints, *spec.startup_taints) if spec else (),
            kubelet=spec.kubelet if spec else None,
            max_pods=max_pods,
        )
        try:
            data_user = user_data(family.name, boot, template.user_data)
        except ValueError as err:
            raise CloudProviderError(f"AWSNodeTemplate {template.name}: userData: {err}") from err
        names: dict[str, str] = {}
        by_ami: dict[str, str] = {}
        for it, _, _ in plan.overrides:
            if it.name in names:
                continue
            ami = ami_for(amis, it.labels, _has_gpu(it))
            if ami is None:
                continue
            if ami.id not in by_ami:
                data = launch_template_data(template, ami.id, groups, data_user, profile)
                by_ami[ami.id] = self.launch_templates.ensure(data, tags)
            names[it.name] = by_ami[ami.id]
        return names

    def _launched(
        self, instance_id: str, request: NodeRequest, by_override: Mapping[tuple[str, str], Any], capacity_type: str
    ) -> Instance:
        raw: dict[str, Any] = {}
        for attempt in range(6):  # the private DNS name can lag the launch
            raw = self._describe(instance_id) or {}
            if raw.get("PrivateDnsName"):
                break
            if attempt < 5:
                self._sleep(1.0)
        if not raw:
            raise CloudProviderError(f"ec2 DescribeInstances ({instance_id}): launched instance not found")
        zone = raw.get("Placement", {}).get("AvailabilityZone", "")
        found = by_override.get((raw.get("InstanceType", ""), zone))
        it = found[0] if found else None
        price = found[1].price if found else 0.0
        log.info("launched instance %s (%s, %s, %s)", instance_id, raw.get("InstanceType"), zone, capacity_type)
        return self._instance(raw, it, price)

    # Instances ---------------------------------------------------------------------------------

    def _describe(self, instance_id: str) -> dict[str, Any] | None:
        """The instance as EC2 reports it (None: unknown), batched with concurrent callers'."""
        try:
            return self.batchers.describe(instance_id)
        except AWSError as err:
            if err.code.startswith("InvalidInstanceID"):
                return None
            raise

    def _terminate_quietly(self, instance_id: str) -> None:
        """Undo a launch whose instance cannot be handed over; garbage collection finds it if this fails."""
        try:
            self.batchers.terminate(instance_id)
            log.info("terminated instance %s after a failed launch", instance_id)
        except AWSError as err:
            log.warning("terminating instance %s after a failed launch: %s", instance_id, err)

    def _instance(self, raw: Mapping[str, Any], it: InstanceType | None, price: float | None = None) -> Instance:
        tags = {t["Key"]: t["Value"] for t in raw.get("Tags") or []}
        instance_id = str(raw["InstanceId"])
        zone = str(raw.get("Placement", {}).get("AvailabilityZone", ""))
        type_name = str(raw.get("InstanceType", ""))
        capacity_type = L.CAPACITY_TYPE_SPOT if raw.get("InstanceLifecycle") == "spot" else L.CAPACITY_TYPE_ON_DEMAND
        if it is None:
            it = next((t for t in self._types(self._all_zones()) if t.name == type_name), None)
        labels: dict[str, str] = dict(it.labels) if it is not None else {L.INSTANCE_TYPE: type_name}
        labels.update({L.ZONE: zone, L.CAPACITY_TYPE: capacity_type, L.INSTANCE_TYPE: type_name})
        provisioner = tags.get(L.PROVISIONER_NAME, "")
        if provisioner:
            labels[L.PROVISIONER_NAME] = provisioner
        if raw.get("ImageId"):
            labels[L.INSTANCE_AMI_ID] = str(raw["ImageId"])
        annotations = {}
        if self.settings.node_label:
            key, _, value = self.settings.node_label.partition("=")
            labels[key] = value
            annotations[key] = value
        dns = str(raw.get("PrivateDnsName") or "").lower()
        name = dns if self.settings.node_name_convention == "ip-name" and dns else instance_id
        launched = raw.get("LaunchTime")
        created = launched.timestamp() if isinstance(launched, datetime) else self._clock.now()
        if price is None and it is not None:
            price = next((o.price for o in it.offerings if o.zone == zone and o.capacity_type == capacity_type), 0.0)
        return Instance(
            provider_id=provider_id(zone, instance_id),
            name=name,
            instance_type=type_name,
            zone=zone,
            capacity_type=capacity_type,
            price=price or 0.0,
            provisioner=provisioner,
            created_at=created,
            labels=labels,
            annotations=annotations,
            capacity={k: v for k, v in (it.capacity if it else {}).items() if v},
            allocatable={k: v for k, v in (it.allocatable if it else {}).items() if v > 0},
        )

    def _all_zones(self) -> frozenset[str]:
        catalog = self._catalog
        return frozenset().union(*catalog.zones_by_type.values()) if catalog else frozenset()

    def delete(self, provider_id: str) -> None:
        instance_id = instance_id_of(provider_id)
        raw = self._describe(instance_id)
        if raw is None or raw.get("State", {}).get("Name") in ("terminated", "shutting-down"):
            raise NodeNotFoundError(f"instance {instance_id} not found")
        try:
            self.batchers.terminate(instance_id)
        except AWSError as err:
            if err.code.startswith("InvalidInstanceID"):
                raise NodeNotFoundError(f"instance {instance_id} not found") from err
            raise
        log.info("terminated instance %s", instance_id)

    def get(self, provider_id: str) -> Instance:
        raw = self._describe(instance_id_of(provider_id))
        if raw is None or raw.get("State", {}).get("Name") not in LIVE_STATES or not self._ours(raw):
            raise NodeNotFoundError(f"instance {provider_id} not found")
        return self._instance(raw, None)

    def is_drifted(self, provider_id: str, instance_type: InstanceType, node_template: AWSNodeTemplate) -> Drift | None:
        instance_id = instance_id_of(provider_id)
        raw = self._describe(instance_id)
        if raw is None or raw.get("State", {}).get("Name") not in LIVE_STATES:
            raise NodeNotFoundError(f"instance {provider_id} not found")
        name = node_template.name
        found: list[Drift | None] = []
        if not node_template.launch_template:
            selected = ami_for(self.resolver.amis(node_template), instance_type.labels, _has_gpu(instance_type))
            found.append(ami_drift(str(raw.get("ImageId") or ""), selected.id if selected else None, name))
            groups = [str(g.get("GroupId")) for g in raw.get("SecurityGroups") or ()]
            found.append(security_group_drift(groups, self.resolver.security_groups(node_template), name))
        subnets = [s.id for s in self.resolver.subnets(node_template)]
        found.append(subnet_drift(str(raw.get("SubnetId") or ""), subnets, name))
        return next((d for d in found if d is not None), None)

    def has_seen(self, provider_id: str) -> bool:
        """Whether EC2 still has a record of this instance as one karpy launched for this cluster
        (garbage collection's proof that a node's missing instance existed — EC2 keeps terminated
        instances, tags included, for about an hour — and interruption handling's check that an
        event's instance is karpy's). An ID EC2 does not know proves nothing — it may be a
        different account or region — and an instance without karpy's ownership tag (Karpenter's,
        during a migration) is not karpy's: both answer False. A foreign answer is remembered, so
        a node of Karpenter's costs one DescribeInstances, not one per pass."""
        instance_id = instance_id_of(provider_id)
        with self._lock:
            if instance_id in self._foreign:
                return False
        raw = self._describe(instance_id)
        if raw is None:
            return False
        if not self._ours(raw):
            with self._lock:
                self._foreign.add(instance_id)
            return False
        return True

    def _ours(self, raw: Mapping[str, Any]) -> bool:
        tags = {t["Key"]: t["Value"] for t in raw.get("Tags") or []}
        return tags.get(self.settings.ownership_tag) == self.settings.cluster_name

    def list(self) -> list[Instance]:
        """The live instances carrying karpy's ownership tag for this cluster (nothing else)."""
        reservations = self.api.pages(
            "ec2",
            "describe_instances",
            "Reservations",
            f"cluster {self.settings.cluster_name}",
            Filters=[
                {"Name": f"tag:{self.settings.ownership_tag}", "Values": [self.settings.cluster_name]},
                {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
            ],
        )
        return [self._instance(i, None) for r in reservations for i in r.get("Instances") or [] if self._ours(i)]


def _offerings(plan: Plan) -> tuple[tuple[str, str, str], ...]:
    return tuple((it.name, o.zone, o.capacity_type) for it, o, _ in plan.overrides)


def _has_gpu(it: InstanceType) -> bool:
    return any(it.capacity.get(r, 0) for r in (*GPU_RESOURCES.values(), NEURON))
