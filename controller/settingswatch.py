"""`SettingsWatch` (`settings`): Karpenter's `karpenter-global-settings` ConfigMap, kept applied.

`reconcile()` (job `settings`, every 2 s; once more at start, before any other job) GETs the
ConfigMap by name in the controller's namespace (`--settings-namespace`, the chart passes the
pod's; RBAC `get` on that one name), parses it (`globalsettings.parse`, Karpenter's keys and
rules) and lays it under the flags and environment (`globalsettings.effective`). When the
effective settings change, `apply(old, new)` hands them to the parts that read them (batch
windows, the AWS provider's cluster name, tags, endpoint, overheads, the interruption queue, drift)
and the change is logged with the fields that moved. A ConfigMap that does not parse, or whose
values cannot work, changes nothing: the last good settings stay, and the problem is logged,
published as a `Warning` event `InvalidSettings` on the ConfigMap and kept in `problem` (the
controller's `/api/v1/status` → the dashboard's banner) until a good version arrives. No
ConfigMap means the defaults. An apiserver that cannot be reached keeps the current settings. With
`--cloud-provider aws` a cluster name is required (Karpenter's `aws.clusterName`): effective settings
without one are refused like an invalid ConfigMap, and `main.build` does not start without one
(`main.run` waits, not ready, re-reading the ConfigMap until it has one: `configwait.py`).

Discovery: with no Kubernetes version set (`--aws-kubernetes-version`), the apiserver's `/version`
gives it (re-read every `VERSION_SECONDS`, so the AMIs' SSM paths follow an upgrade); with no
cluster endpoint set anywhere, `discover_endpoint` gives it (kube-public/cluster-info, then the
cloud's answer) — both through injected callables, so this module stays cloud-agnostic.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import yaml

from controller.clock import Clock
from controller.events import WARNING, Event, EventRecorder, ObjectRef
from controller.globalsettings import changed, effective, parse
from controller.kube.client import Kube
from controller.kube.errors import KubeError, NotFoundError
from controller.kube.resources import CONFIGMAPS
from controller.settings import Settings

log = logging.getLogger(__name__)

VERSION_SECONDS = 300.0
_VERSION = re.compile(r"^v?(\d+)\.(\d+)")

Apply = Callable[[Settings, Settings], None]


def cluster_info(kube: Kube) -> tuple[str, str]:
    """(server URL, base64 CA) of kube-public/cluster-info's kubeconfig, the apiserver's public
    description of itself (kubeadm and many installers write it); ("", "") when absent."""
    try:
        obj = kube.get(CONFIGMAPS, "cluster-info", "kube-public")
    except (KubeError, OSError):
        return "", ""
    text = (obj.get("data") or {}).get("kubeconfig")
    if not isinstance(text, str):
        return "", ""
    try:
        doc = yaml.safe_load(text)
        cluster = doc["clusters"][0]["cluster"]
    except (yaml.YAMLError, KeyError, IndexError, TypeError):
        return "", ""
    return str(cluster.get("server") or ""), str(cluster.get("certificate-authority-data") or "")


def minor_version(git_version: str) -> str:
    """ "v1.29.3-eks-1234" → "1.29"; "" when it is not a version."""
    match = _VERSION.match(git_version.strip())
    return f"{match.group(1)}.{match.group(2)}" if match else ""


class SettingsWatch:
    name = "settings"

    def __init__(
        self,
        kube: Kube,
        recorder: EventRecorder,
        clock: Clock,
        base: Settings,
        apply: Apply,
        discover_version: Callable[[], str] | None = None,
        discover_endpoint: Callable[[Settings], tuple[str, str]] | None = None,
    ) -> None:
        self.kube, self.recorder, self.clock = kube, recorder, clock
        self.base = base
        self.current = base
        self.problem = ""
        self._apply = apply
        self._discover_version = discover_version
        self._discover_endpoint = discover_endpoint
        self._version = ""
        self._version_at: float | None = None
        self._endpoint: tuple[str, str] = ("", "")
        self._data: dict[str, Any] | None = None  # the last ConfigMap data read (None: not read yet)

    # discovery -----------------------------------------------------------------------------------

    def _kubernetes_version(self) -> str:
        if self._discover_version is None or self.base.aws_kubernetes_version:
            return self.base.aws_kubernetes_version
        now = self.clock.now()
        if self._version_at is None or now - self._version_at >= VERSION_SECONDS or not self._version:
            self._version_at = now
            try:
                found = minor_version(self._discover_version())
            except (KubeError, OSError) as err:
                log.warning("reading the apiserver's version: %s", err)
                found = ""
            if found and found != self._version:
                log.info("kubernetes version %s (from the apiserver)", found)
                self._version = found
        return self._version

    def _with_endpoint(self, settings: Settings) -> Settings:
        if settings.aws_cluster_endpoint or self._discover_endpoint is None:
            return settings
        if not self._endpoint[0]:
            try:
                self._endpoint = self._discover_endpoint(settings)
            except Exception as err:  # a discovery source may fail in many ways; say so and retry
                log.warning("discovering the cluster endpoint: %s", err)
            if self._endpoint[0]:
                log.info("cluster endpoint %s (discovered)", self._endpoint[0])
        endpoint, ca = self._endpoint
        if not endpoint:
            return settings
        ca = settings.aws_cluster_ca_bundle or ca
        return replace(settings, aws_cluster_endpoint=endpoint, aws_cluster_ca_bundle=ca)

    # the ConfigMap ----------------------------------------------------------------------------

    def _read(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """(data, metadata) of the ConfigMap; ({}, {}) when there is none; None when unreadable."""
        name, namespace = self.base.settings_configmap, self.base.settings_namespace
        if not name or not namespace:
            return {}, {}
        try:
            obj = self.kube.get(CONFIGMAPS, name, namespace)
        except NotFoundError:
            return {}, {}
        except (KubeError, OSError) as err:
            log.warning("reading configmap %s/%s: %s", namespace, name, err)
            return None
        data = obj.get("data") or {}
        return (dict(data) if isinstance(data, dict) else {"": data}), dict(obj.get("metadata") or {})

    def reconcile(self) -> Settings:
        read = self._read()
        if read is None:
            return self.current
        data, meta = read
        parsed = parse(data)
        errors = list(parsed.errors)
        new = self.current
        if not errors:
            version = self._kubernetes_version()
            base = replace(self.base, aws_kubernetes_version=version or "1.27")
            new = self._with_endpoint(effective(base, parsed.values))
            try:
                new.check()
                new.require_cluster_name()
            except ValueError as err:
                errors.append(str(err))
        if data != self._data and parsed.ignored:
            log.info("karpenter-global-settings: ignoring keys karpy does not implement: %s", ", ".join(parsed.ignored))
        self._data = data
        if errors:
            self._report(meta, "; ".join(errors))
            return self.current
        if self.problem:
            log.info("karpenter-global-settings is valid again")
        self.problem = ""
        discovered = ("aws_kubernetes_version", "aws_cluster_ca_bundle")
        moved = changed(self.current, new) + tuple(f for f in discovered if getattr(self.current, f) != getattr(new, f))
        if moved:
            old, self.current = self.current, new
            log.info("settings changed: %s", ", ".join(f"{f}={getattr(new, f)!r}" for f in moved))
            self._apply(old, new)
        return self.current

    @property
    def read(self) -> bool:
        """Whether the ConfigMap (or its absence) has been read at least once."""
        return self._data is not None

    def _report(self, meta: dict[str, Any], text: str) -> None:
        name, namespace = self.base.settings_configmap, self.base.settings_namespace
        if meta:
            problem = f"configmap {namespace}/{name} is invalid, keeping the last good settings: {text}"
        else:  # no ConfigMap (or none configured), and the flags alone cannot work
            where = f"configmap {namespace}/{name}" if name and namespace else "the ConfigMap"
            problem = f"the settings cannot work without {where}, keeping the last good settings: {text}"
        if problem != self.problem:
            log.error("%s", problem)
        self.problem = problem
        ref = ObjectRef("ConfigMap", name, namespace, str(meta.get("uid", "")))
        self.recorder.publish(Event(ref, WARNING, "InvalidSettings", text[:1000]))
