"""Asking the cloud whether nodes drifted: the I/O half of drift (`drift.py` is the pure half).

`DriftChecker.inputs(snap, types)` gives a pass's `DriftInputs`: the switch, the AWSNodeTemplate
each Provisioner's nodes are made from by reference (`referenced_templates`), and per owned node
the cloud's answer (`CloudProvider.is_drifted(provider_id, instance_type, template)`). An answer
is kept for `check_seconds` (Karpenter re-checks a node every 5 min) unless what it depends on
changes — the node's instance, instance type or template — so editing a template's selectors is
noticed on the next pass. A node whose Provisioner names no template, or an inline provider, is
not drifted by the cloud; a cloud error leaves the node unknown (logged; its annotation stays).
The nodes due in a pass are asked at once (`DRIFT_WORKERS`), so the provider can merge their
DescribeInstances calls (`cloudprovider/batcher.py`).
Nothing is asked while drift is off.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass

from controller.apis.awsnodetemplate import AWSNodeTemplate
from controller.clock import Clock
from controller.cloudprovider.base import CloudProvider
from controller.cloudprovider.drift import Drift
from controller.cloudprovider.errors import CloudProviderError, NodeNotFoundError
from controller.core import labels as L
from controller.deprovisioning.types import DriftInputs
from controller.provisioning.nodetemplates import ProvisionerTypes
from controller.scheduling.types import InstanceType
from controller.state.snapshot import Snapshot

log = logging.getLogger(__name__)

CHECK_SECONDS = 300.0
DRIFT_WORKERS = 16


def referenced_templates(snap: Snapshot, types: ProvisionerTypes) -> dict[str, AWSNodeTemplate | None]:
    """Per valid Provisioner, its resolved template unless it comes from an inline `spec.provider`."""
    out: dict[str, AWSNodeTemplate | None] = {}
    for view in snap.valid_provisioners():
        prov = view.provisioner
        inline = prov is not None and prov.provider_ref is None and prov.provider is not None
        out[view.name] = None if inline else types.templates.get(view.name)
    return out


@dataclass(frozen=True, slots=True)
class _Answer:
    key: tuple[str, str, str]  # provider ID, instance type, template fingerprint
    at: float
    drift: Drift | None


class DriftChecker:
    def __init__(self, cloud: CloudProvider, clock: Clock, enabled: bool, check_seconds: float = CHECK_SECONDS) -> None:
        self._cloud, self._clock = cloud, clock
        self.enabled = enabled
        self._check_seconds = check_seconds
        self._answers: dict[str, _Answer] = {}
        self._lock = threading.Lock()  # the controller's pass and the dashboard's outlooks both ask
        self._pool = ThreadPoolExecutor(DRIFT_WORKERS, thread_name_prefix="drift")

    def inputs(self, snap: Snapshot, types: ProvisionerTypes) -> DriftInputs:
        if not self.enabled:
            return DriftInputs()
        templates = referenced_templates(snap, types)
        with self._lock:
            return DriftInputs(True, templates, self._ask(snap, types, templates))

    def _ask(
        self, snap: Snapshot, types: ProvisionerTypes, templates: Mapping[str, AWSNodeTemplate | None]
    ) -> dict[str, Drift | None]:
        now = self._clock.now()
        out: dict[str, Drift | None] = {}
        asks: list[tuple[str, tuple[str, str, str], InstanceType, AWSNodeTemplate]] = []
        fingerprints = {n: json.dumps(t.to_wire(), sort_keys=True) for n, t in templates.items() if t is not None}
        for name, node in snap.nodes.items():
            prov = node.labels.get(L.PROVISIONER_NAME, "")
            if not node.owned or node.deleting or prov not in templates:
                continue
            template = templates[prov]
            if template is None:
                out[name] = None
                continue
            it = next((t for t in types.types.get(prov, ()) if t.name == node.instance_type), None)
            if it is None or not node.provider_id:
                continue
            key = (node.provider_id, it.name, fingerprints[prov])
            known = self._answers.get(name)
            if known is not None and known.key == key and now - known.at < self._check_seconds:
                out[name] = known.drift
                continue
            asks.append((name, key, it, template))
        # every node due at once: the provider can merge their DescribeInstances into one call
        answers = self._pool.map(lambda ask: copy_context().run(self._is_drifted, *ask), asks)
        for (name, key, _, _), (answered, drift) in zip(asks, answers, strict=True):
            if answered:
                self._answers[name] = _Answer(key, now, drift)
                out[name] = drift
        for gone in set(self._answers) - set(snap.nodes):
            del self._answers[gone]
        return out

    def _is_drifted(
        self, name: str, key: tuple[str, str, str], it: InstanceType, template: AWSNodeTemplate
    ) -> tuple[bool, Drift | None]:
        """(answered, the drift); not answered when the instance is gone or the cloud failed:
        the node stays unknown."""
        try:
            return True, self._cloud.is_drifted(key[0], it, template)
        except NodeNotFoundError:
            return False, None
        except CloudProviderError as err:
            log.warning("checking node %s for drift: %s", name, err)
            return False, None
