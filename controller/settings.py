"""`Settings`: the controller process's one typed settings object.

Every field is a `karpy controller` flag (`--batch-idle-seconds`) with an environment twin
(`KARPY_BATCH_IDLE_SECONDS`); a flag wins over the environment, which wins over Karpenter's
`karpenter-global-settings` ConfigMap (`globalsettings.py`, read by `settingswatch.py`), which wins
over the default. `Settings.from_args(namespace, environ)` builds it and records in `explicit`
which fields a flag or the environment set; `add_arguments(parser)` declares the flags; `main.py`
logs it once at start. Nothing else in the controller reads `os.environ`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

SIMULATED_CLUSTER_NAME = "karpy"  # the simulated cloud's cluster when none is set (it needs no real one)
CLUSTER_NAME_REQUIRED = (
    "cluster-name: required with --cloud-provider aws (Karpenter's aws.clusterName): set --cluster-name, "
    "KARPY_CLUSTER_NAME (chart controller.clusterName) or aws.clusterName in the karpenter-global-settings ConfigMap"
)


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


def _flags() -> list[dataclasses.Field[Any]]:
    return [f for f in fields(Settings) if "help" in f.metadata]


@dataclass(frozen=True)
class Settings:
    kubeconfig: str = _f("", "kubeconfig file (default: in-cluster, then $KUBECONFIG)")
    cloud_provider: str = _f("simulated", "cloud provider: simulated or aws")
    simulated_db: str = _f("~/.local/state/karpy/simulated-cloud.db", "SQLite file of the simulated cloud")
    simulated_catalog: str = _f(
        "",
        "instance types of the simulated cloud, a `karpy catalog --output json` file used as written, "
        "capacity and overhead as given (default: the built-in AWS-like catalog, shaped per provisioner)",
    )
    simulated_node_label: str = _f(
        "kwok.x-k8s.io/node=fake", "label each simulated instance's node carries (the local kwok manages these)"
    )
    simulated_api_limits: bool = _f(
        True, "the simulated cloud refuses calls beyond EC2's per-action rates (RequestLimitExceeded)"
    )
    cluster_name: str = _f(
        "",
        "cluster name; instances are tagged with it. Required with --cloud-provider aws (here, KARPY_CLUSTER_NAME or "
        "aws.clusterName of karpenter-global-settings); the simulated cloud uses karpy when none is set",
    )
    aws_region: str = _f("", "AWS region (required with --cloud-provider aws; falls back to AWS_REGION)")
    aws_endpoint_url: str = _f("", "AWS endpoint URL override for every service (e.g. a moto server)")
    aws_cluster_endpoint: str = _f("", "the apiserver URL nodes bootstrap against (user data)")
    aws_cluster_ca_bundle: str = _f("", "base64 CA bundle of the apiserver for the node bootstrap")
    aws_cluster_dns_ip: str = _f("", "cluster DNS service IP passed to the kubelet")
    aws_kubernetes_version: str = _f(
        "", "Kubernetes major.minor picking the EKS optimized AMIs (empty: the apiserver's version)"
    )
    aws_interruption_queue: str = _f("", "SQS queue name of EC2 interruption events (empty: off)")
    aws_price_file: str = _f("", "on-demand price file used until the pricing API answers (default: built in)")
    aws_default_instance_profile: str = _f("", "instance profile when an AWSNodeTemplate names none")
    aws_isolated_vpc: bool = _f(False, "no pricing API calls (the price file is used)")
    aws_node_label: str = _f("", "label key=value every launched node carries (e.g. kwok's, for tests)")
    aws_tags: str = _f("", "JSON object of tags on every instance, volume and launch template")
    aws_vm_memory_overhead_percent: float = _f(0.075, "share of an instance's memory the hypervisor keeps")
    aws_enable_pod_eni: bool = _f(False, "nodes offer vpc.amazonaws.com/pod-eni (security groups for pods)")
    aws_enable_eni_limited_pod_density: bool = _f(True, "max pods from the ENI limits (off: 110)")
    aws_node_name_convention: str = _f("ip-name", "node names: ip-name (private DNS name) or resource-name")
    aws_ownership_tag: str = _f(
        "karpy.sh/managed-by",
        "key of the tag (value: the cluster name) karpy puts on its instances, launch templates and fleets; "
        "garbage collection, launch-template cleanup and interruption handling touch only resources carrying it",
    )
    aws_launch_template_ttl_seconds: float = _f(
        300.0, "a launch template karpy created and has not used for this long is deleted"
    )
    batch_idle_seconds: float = _f(1.0, "provisioning window closes after this long without new pods")
    batch_max_seconds: float = _f(10.0, "provisioning window closes after this long at most")
    drift_enabled: bool = _f(
        False,
        "replace nodes that drifted from their Provisioner or AWSNodeTemplate (Karpenter's featureGates.driftEnabled)",
    )
    settings_configmap: str = _f(
        "karpenter-global-settings", "Karpenter's global settings ConfigMap, in --settings-namespace (empty: none)"
    )
    settings_namespace: str = _f("", "namespace of that ConfigMap (empty: the controller's own, the chart sets it)")
    bind_pods: bool = _f(True, "bind provisioned pods to their new node (off: kube-scheduler binds)")
    ice_ttl_seconds: float = _f(45.0, "how long an offering that ran out of capacity is skipped")
    gc_leak_seconds: float = _f(30.0, "an instance without a node for this long is terminated")
    tick_seconds: float = _f(0.2, "how often the provisioning job polls its batch window")
    termination_interval_seconds: float = _f(0.5, "how often deleting nodes are driven")
    gc_interval_seconds: float = _f(10.0, "how often garbage collection runs")
    gc_max_node_deletions: int = _f(10, "garbage collection deletes at most this many nodes per pass")
    deprovisioning_interval_seconds: float = _f(1.0, "how often the deprovisioning job runs a pass")
    validation_wait_seconds: float = _f(15.0, "a consolidation command is re-validated this long after it is computed")
    poll_period_seconds: float = _f(10.0, "deprovisioning re-checks expiration and emptiness this often when idle")
    replacement_timeout_seconds: float = _f(570.0, "a replacement node not initialized by then fails the command")
    consolidated_reset_seconds: float = _f(300.0, "consolidation runs again after this long even if nothing changed")
    consolidation_budget_seconds: float = _f(
        20.0, "a deprovisioning pass stops simulating after this long and continues where it stopped in the next"
    )
    consolidation_order: str = _f(
        "first",
        "how a pass chooses among the consolidation methods: first (Karpenter v0.31: the first with a command acts) "
        "or value (karpy: the command saving most per unit of disruption)",
    )
    drift_check_seconds: float = _f(300.0, "how often the cloud is asked whether a node's instance drifted")
    resync_seconds: float = _f(3600.0, "full re-list of every watched kind this often (a safety net: watches resume)")
    leader_elect: bool = _f(True, "only the holder of the Lease acts")
    leader_election_id: str = _f("", "identity in the Lease (default: hostname_pid)")
    leader_election_namespace: str = _f("kube-system", "namespace of the Lease")
    leader_election_name: str = _f("karpy-controller", "name of the Lease")
    savings_configmap: str = _f(
        "karpy-savings", "ConfigMap (in the Lease's namespace) where the savings of consolidation are kept"
    )
    lease_duration_seconds: float = _f(10.0, "a replica takes over after the leader has not renewed for this long")
    lease_retry_seconds: float = _f(1.0, "how often the Lease is renewed or tried")
    http_host: str = _f(
        "127.0.0.1", "address of /metrics, /healthz and /api/v1/decisions (the chart sets 0.0.0.0 in the pod)"
    )
    http_port: int = _f(8080, "port of the HTTP server (0: any free port)")
    api_auth: str = _f(
        "none", "who may GET /api/v1/*: none (anyone) or kubernetes (a bearer token allowed get dashboard.karpy.sh)"
    )
    log_format: str = _f("json", "json or text")
    log_level: str = _f("info", "debug, info, warning or error")
    explicit: frozenset[str] = field(default=frozenset(), compare=False)  # fields a flag or KARPY_* set

    @property
    def identity(self) -> str:
        return self.leader_election_id or f"{socket.gethostname()}_{os.getpid()}"

    @property
    def simulated_db_path(self) -> str:
        return os.path.expanduser(self.simulated_db)

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        for f in _flags():
            flag = "--" + f.name.replace("_", "-")
            help_text = f"{f.metadata['help']} (env KARPY_{f.name.upper()}, default {f.default!r})"
            if f.type in (bool, "bool"):
                parser.add_argument(
                    flag, dest=f.name, action=argparse.BooleanOptionalAction, default=None, help=help_text
                )
            else:
                parser.add_argument(flag, dest=f.name, default=None, help=help_text)

    @staticmethod
    def from_args(namespace: argparse.Namespace | None = None, environ: Mapping[str, str] | None = None) -> Settings:
        """Flags > `KARPY_*` environment > defaults; raises ValueError naming a bad value."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in _flags():
            raw = getattr(namespace, f.name, None) if namespace is not None else None
            if raw is None:
                raw = env.get(f"KARPY_{f.name.upper()}")
            if raw is None and f.name == "kubeconfig":
                raw = env.get("KUBECONFIG")
            if raw is None and f.name == "aws_region":
                raw = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
            if raw is None:
                continue
            values[f.name] = _convert(f, raw)
        # an empty string (the chart renders unset values so) sets nothing the ConfigMap could set
        settings = Settings(**values, explicit=frozenset(k for k, v in values.items() if v != ""))
        settings.check()
        return settings

    def check(self) -> None:
        """Raises ValueError naming the first setting that cannot work."""
        settings = self
        if settings.log_format not in ("json", "text"):
            raise ValueError(f"log-format: must be json or text, not {settings.log_format!r}")
        if settings.cloud_provider not in ("simulated", "aws"):
            raise ValueError(f"cloud-provider: must be simulated or aws, not {settings.cloud_provider!r}")
        if settings.consolidation_order not in ("first", "value"):
            raise ValueError(f"consolidation-order: must be first or value, not {settings.consolidation_order!r}")
        if settings.api_auth not in ("none", "kubernetes"):
            raise ValueError(f"api-auth: must be none or kubernetes, not {settings.api_auth!r}")
        if settings.aws_tags:
            settings.tags()  # raises naming the flag
        owner = settings.aws_ownership_tag
        if not owner.strip() or owner.lower().startswith("aws:"):
            raise ValueError(f"aws-ownership-tag: must be a tag key not starting with aws:, not {owner!r}")
        if settings.cloud_provider == "aws" and not settings.aws_region:
            raise ValueError("aws-region: required with --cloud-provider aws (or set AWS_REGION)")
        convention = settings.aws_node_name_convention
        if convention not in ("ip-name", "resource-name"):
            raise ValueError(f"aws-node-name-convention: must be ip-name or resource-name, not {convention!r}")
        if settings.aws_vm_memory_overhead_percent < 0:
            raise ValueError("aws-vm-memory-overhead-percent: cannot be negative")
        if settings.batch_idle_seconds <= 0 or settings.batch_max_seconds <= 0:
            raise ValueError("batch-idle-seconds, batch-max-seconds: must be positive")
        if settings.batch_idle_seconds > settings.batch_max_seconds:
            raise ValueError("batch-idle-seconds: must not be longer than batch-max-seconds")

    def require_cluster_name(self) -> None:
        """Raises ValueError when the AWS provider would run without a cluster name: Karpenter v0.31
        refuses to start without `aws.clusterName`, and karpy never tags instances with a made-up one."""
        if self.cloud_provider == "aws" and not self.cluster_name.strip():
            raise ValueError(CLUSTER_NAME_REQUIRED)

    def tags(self) -> dict[str, str]:
        """`aws_tags` as a mapping; raises ValueError naming the flag."""
        if not self.aws_tags:
            return {}
        try:
            value = json.loads(self.aws_tags)
        except json.JSONDecodeError as err:
            raise ValueError(f"aws-tags: not JSON: {err}") from None
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ValueError("aws-tags: must be a JSON object of strings")
        return {str(k): v for k, v in value.items()}

    def to_log(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["explicit"] = sorted(self.explicit)
        return out


def _convert(f: dataclasses.Field[Any], raw: Any) -> Any:
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if isinstance(raw, bool) or kind == "str":
        return raw
    text = str(raw).strip()
    try:
        if kind == "bool":
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        raise ValueError(f"{f.name.replace('_', '-')}: invalid {kind} value {text!r}") from None
    return raw
