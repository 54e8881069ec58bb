"""End to end: leaked instances are terminated, nodes whose instance is gone are deleted (issues 5, 14)."""

from __future__ import annotations

import time

import pytest

from controller.cloudprovider.base import NodeRequest
from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.core import labels as L
from controller.core.requirements import Requirements
from controller.kube.errors import NotFoundError
from controller.kube.resources import NODES
from tests.e2e.env import KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e


def test_leaked_instance_terminated_after_30s_and_orphan_node_deleted(karpy: KarpyEnv) -> None:
    karpy.provisioner()
    karpy.start("replica-a", "--gc-interval-seconds", "1")
    m5 = tuple(it for it in simulated_catalog() if it.name == "m5.large")
    leaked = karpy.cloud.create(NodeRequest("default", Requirements(), m5))  # launched, but no Node was made
    gone = karpy.cloud.create(NodeRequest("default", Requirements(), m5))
    karpy.cloud.delete(gone.provider_id)  # its instance terminated outside karpy: the store remembers it
    orphan = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"orphan-{karpy.namespace}", "labels": {L.PROVISIONER_NAME: "default"},
                     "finalizers": [L.TERMINATION_FINALIZER]},
        "spec": {"providerID": gone.provider_id},
    }  # fmt: skip
    unknown = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"unknown-{karpy.namespace}", "labels": {L.PROVISIONER_NAME: "default"}},
        "spec": {"providerID": "simulated:///us-west-2a/i-00000000000000000"},
    }  # an instance this store never had (e.g. launched by a replica with another store): left alone
    karpy.kube.create(NODES, orphan)
    karpy.kube.create(NODES, unknown)
    started = time.monotonic()

    def orphan_gone() -> bool:
        try:
            karpy.kube.get(NODES, orphan["metadata"]["name"])  # type: ignore[index]
        except NotFoundError:
            return True
        return False

    until(orphan_gone, 15, "the node without an instance to be deleted")
    until(lambda: leaked.provider_id not in {i.provider_id for i in karpy.cloud.list()}, 45, "the leak to be collected")
    assert time.monotonic() - started >= 25  # not before its 30 s of grace (measured from launch)
    assert karpy.kube.get(NODES, unknown["metadata"]["name"])  # type: ignore[index]
