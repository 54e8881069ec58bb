"""User data per AMI family (spec §5.9 "User data"). Pure.

- AL2 / Ubuntu: MIME multipart; the template's own user data first (a MIME document's parts, or
  a plain script wrapped as one shell part), karpy's part last: `/etc/eks/bootstrap.sh` with the
  apiserver endpoint, the CA bundle, the container runtime, the cluster DNS IP (the provisioner's
  `clusterDNS[0]`, else the global one), max pods and `--kubelet-extra-args` in Karpenter v0.31's
  order (node labels, taints, max pods, pods per core, reserved resources, hard and soft eviction
  thresholds with their grace periods, the maximum pod grace period, image GC thresholds, CPU CFS
  quota).
- Bottlerocket: TOML; the template's own TOML merged under karpy's `[settings.kubernetes]`, every
  kubeletConfiguration field under the key Bottlerocket documents for it (`cluster-dns-ip`,
  `max-pods`, `kube-reserved`, `system-reserved`, `eviction-hard`, `eviction-soft`,
  `eviction-soft-grace-period`, `eviction-max-pod-grace-period`, `image-gc-high-threshold-percent`,
  `image-gc-low-threshold-percent`, `cpu-cfs-quota-enforced`); `podsPerCore` and
  `containerRuntime` have no Bottlerocket setting (its runtime is containerd).
- Custom: the template's user data verbatim.
"""

from __future__ import annotations

import email
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.cloudprovider.aws.amifamily import AL2, BOTTLEROCKET, CUSTOM
from controller.core import labels as L
from controller.core.quantity import parse_duration
from controller.core.resources import format_resources
from controller.core.taints import Taint
from controller.scheduling.types import KubeletSpec

BOUNDARY = "//"


@dataclass(frozen=True)
class Bootstrap:
    cluster_name: str
    endpoint: str
    ca_bundle: str  # base64 PEM
    dns_ip: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    kubelet: KubeletSpec | None = None
    max_pods: int | None = None  # set when ENI-limited density is off or maxPods is given


def _reserved(values: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(format_resources(values).items()))


def go_duration(text: str) -> str:
    """A duration as Go's `time.Duration.String()` writes it ("1m30s", "2m0s", "500ms"), as
    Karpenter renders `evictionSoftGracePeriod`."""
    total = parse_duration(text)
    if total == 0:
        return "0s"
    sign, total = ("-", -total) if total < 0 else ("", total)
    if total < 1:
        millis = total * 1000
        return f"{sign}{millis.normalize():f}ms"
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    out = f"{int(hours)}h" if hours else ""
    if hours or minutes:
        out += f"{int(minutes)}m"
    return f"{sign}{out}{seconds.normalize():f}s"


def dns_ip(b: Bootstrap) -> str:
    """The provisioner's `clusterDNS[0]`, else the global setting (Karpenter: the kubelet's first)."""
    if b.kubelet is not None and b.kubelet.cluster_dns:
        return b.kubelet.cluster_dns[0]
    return b.dns_ip


def kubelet_args(b: Bootstrap) -> list[str]:
    args = []
    if b.labels:
        args.append("--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(b.labels.items())))
    if b.taints:
        args.append("--register-with-taints=" + ",".join(f"{t.key}={t.value}:{t.effect}" for t in b.taints))
    if b.max_pods is not None:
        args.append(f"--max-pods={b.max_pods}")
    k = b.kubelet
    if k is not None:
        if k.pods_per_core:
            args.append(f"--pods-per-core={k.pods_per_core}")
        if k.system_reserved:
            args.append("--system-reserved=" + _reserved(k.system_reserved))
        if k.kube_reserved:
            args.append("--kube-reserved=" + _reserved(k.kube_reserved))
        if k.eviction_hard:
            args.append("--eviction-hard=" + ",".join(f"{s}<{v}" for s, v in sorted(k.eviction_hard.items())))
        if k.eviction_soft:
            args.append("--eviction-soft=" + ",".join(f"{s}<{v}" for s, v in sorted(k.eviction_soft.items())))
        if k.eviction_soft_grace_period:
            periods = sorted(k.eviction_soft_grace_period.items())
            args.append("--eviction-soft-grace-period=" + ",".join(f"{s}={go_duration(v)}" for s, v in periods))
        if k.eviction_max_pod_grace_period is not None:
            args.append(f"--eviction-max-pod-grace-period={k.eviction_max_pod_grace_period}")
        if k.image_gc_high_threshold_percent is not None:
            args.append(f"--image-gc-high-threshold={k.image_gc_high_threshold_percent}")
        if k.image_gc_low_threshold_percent is not None:
            args.append(f"--image-gc-low-threshold={k.image_gc_low_threshold_percent}")
        if k.cpu_cfs_quota is not None:
            args.append(f"--cpu-cfs-quota={'true' if k.cpu_cfs_quota else 'false'}")
    return args


def eks_script(b: Bootstrap, container_runtime: str | None = "containerd") -> str:
    parts = [
        f"/etc/eks/bootstrap.sh '{b.cluster_name}'",
        f"--apiserver-endpoint '{b.endpoint}'",
        f"--b64-cluster-ca '{b.ca_bundle}'",
    ]
    if b.kubelet is not None and b.kubelet.container_runtime:
        container_runtime = b.kubelet.container_runtime
    if container_runtime:
        parts.append(f"--container-runtime {container_runtime}")
    dns = dns_ip(b)
    if dns:
        if ":" in dns:
            parts.append("--ip-family ipv6")
        parts.append(f"--dns-cluster-ip '{dns}'")
    if b.max_pods is not None:
        parts.append("--use-max-pods false")
    args = kubelet_args(b)
    if args:
        parts.append("--kubelet-extra-args '" + " ".join(args) + "'")
    return "#!/bin/bash -xe\nexec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n" + (
        " \\\n".join(parts) + "\n"
    )


def _custom_parts(custom: str | None) -> list[tuple[str, str]]:
    """(content type, body) of the template's user data."""
    if not custom:
        return []
    if custom.lstrip().startswith("MIME-Version"):
        message = email.message_from_string(custom)
        out = []
        for part in message.walk():
            if part.is_multipart():
                continue
            body = part.get_payload()
            out.append((part.get_content_type(), body if isinstance(body, str) else str(body)))
        return out
    return [("text/x-shellscript", custom)]


def mime(custom: str | None, script: str) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for content_type, body in [*_custom_parts(custom), ("text/x-shellscript", script)]:
        lines += [f"--{BOUNDARY}", f'Content-Type: {content_type}; charset="us-ascii"', "", body.rstrip("\n")]
    lines += [f"--{BOUNDARY}--", ""]
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _toml(table: Mapping[str, Any], prefix: str = "") -> list[str]:
    lines, nested = [], []
    for key, value in table.items():
        if isinstance(value, Mapping):
            nested.append((key, value))
        else:
            lines.append(f"{_toml_value(key) if '.' in key or '/' in key else key} = {_toml_value(value)}")
    out = ([f"[{prefix}]"] if prefix and lines else []) + lines + ([""] if lines else [])
    for key, value in nested:
        name = key if all(c.isalnum() or c in "-_" for c in key) else _toml_value(key)
        out += _toml(value, f"{prefix}.{name}" if prefix else name)
    return out


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = dict(value) if isinstance(value, Mapping) else value
    return base


def bottlerocket(b: Bootstrap, custom: str | None) -> str:
    """Raises ValueError if the template's user data is not TOML."""
    k8s: dict[str, Any] = {"cluster-name": b.cluster_name, "api-server": b.endpoint, "cluster-certificate": b.ca_bundle}
    if dns_ip(b):
        k8s["cluster-dns-ip"] = dns_ip(b)
    if b.max_pods is not None:
        k8s["max-pods"] = b.max_pods
    if b.labels:
        k8s["node-labels"] = dict(sorted(b.labels.items()))
    if b.taints:
        taints: dict[str, list[str]] = {}
        for t in b.taints:
            taints.setdefault(t.key, []).append(f"{t.value}:{t.effect}")
        k8s["node-taints"] = taints
    if b.kubelet is not None:
        if b.kubelet.system_reserved:
            k8s["system-reserved"] = dict(sorted(format_resources(b.kubelet.system_reserved).items()))
        if b.kubelet.kube_reserved:
            k8s["kube-reserved"] = dict(sorted(format_resources(b.kubelet.kube_reserved).items()))
        k = b.kubelet
        if k.eviction_hard:
            k8s["eviction-hard"] = dict(sorted(k.eviction_hard.items()))
        if k.eviction_soft:
            k8s["eviction-soft"] = dict(sorted(k.eviction_soft.items()))
        if k.eviction_soft_grace_period:
            periods = sorted(k.eviction_soft_grace_period.items())
            k8s["eviction-soft-grace-period"] = {s: go_duration(v) for s, v in periods}
        if k.eviction_max_pod_grace_period is not None:
            k8s["eviction-max-pod-grace-period"] = k.eviction_max_pod_grace_period
        if k.image_gc_high_threshold_percent is not None:
            k8s["image-gc-high-threshold-percent"] = str(k.image_gc_high_threshold_percent)
        if k.image_gc_low_threshold_percent is not None:
            k8s["image-gc-low-threshold-percent"] = str(k.image_gc_low_threshold_percent)
        if k.cpu_cfs_quota is not None:
            k8s["cpu-cfs-quota-enforced"] = k.cpu_cfs_quota
    doc = tomllib.loads(custom) if custom else {}
    merged = _merge(doc, {"settings": {"kubernetes": k8s}})
    return "\n".join(_toml(merged)).rstrip("\n") + "\n"


def user_data(family: str, b: Bootstrap, custom: str | None) -> str:
    if family == CUSTOM:
        return custom or ""
    if family == BOTTLEROCKET:
        return bottlerocket(b, custom)
    return mime(custom, eks_script(b, "containerd" if family == AL2 else None))  # Ubuntu: only when given


def node_labels(provisioner: str, labels: Mapping[str, str], capacity_type: str) -> dict[str, str]:
    out = dict(labels)
    out[L.PROVISIONER_NAME] = provisioner
    out[L.CAPACITY_TYPE] = capacity_type
    return out
