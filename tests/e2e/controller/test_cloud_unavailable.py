"""A cloud that does not answer at start (issue 20, defect 5), end to end: `karpy controller
--cloud-provider aws` pointed at an endpoint where nothing listens stays up, says what is wrong
(`/readyz` 503, `/api/v1/status`, the metric, an event on the Provisioner), launches nothing for a
pending pod, and recovers by itself once a moto_server starts answering on that endpoint."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from controller.core import labels as L
from controller.kube.resources import AWSNODETEMPLATES
from localcluster import procs
from tests.controller.cloudprovider.aws.builders import DISCOVERY, make_account
from tests.e2e.env import Controller, KarpyEnv
from tests.support.moto import CREDENTIALS, REGION, MotoServer
from tests.support.poll import until

pytestmark = pytest.mark.e2e

TYPES = {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m5.xlarge"]}


@dataclass
class LateMoto:
    """A moto_server to start later on a port chosen now (stopped after the `karpy` teardown)."""

    port: int
    log: Path
    server: MotoServer | None = None

    def start(self) -> MotoServer:
        self.server = MotoServer.start(self.log, self.port)
        return self.server


@pytest.fixture
def late_moto(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LateMoto]:
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    late = LateMoto(procs.free_port(), tmp_path / "moto.log")
    try:
        yield late
    finally:
        if late.server is not None:
            late.server.stop()


def unschedulable_mark(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)


def holds(check: Callable[[], bool], seconds: float, what: str) -> None:
    """`check` stays true for `seconds` (several of the controller's passes), polled."""
    deadline = time.monotonic() + seconds

    def still() -> bool:
        assert check(), f"no longer true: {what}"
        return time.monotonic() >= deadline

    until(still, seconds + 30, f"{what} for {seconds:.0f}s", interval=0.5)


def readyz(ctrl: Controller) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ctrl.port}/readyz", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_the_controller_waits_for_an_unreachable_cloud_and_recovers_when_it_answers(
    late_moto: LateMoto, karpy: KarpyEnv
) -> None:
    endpoint = f"http://127.0.0.1:{late_moto.port}"
    karpy.provisioner(providerRef={"name": "default"}, requirements=[TYPES])
    template = {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": "default"},
        "spec": {"subnetSelector": DISCOVERY, "securityGroupSelector": DISCOVERY, "amiSelector": {"karpy-test": "eks"}},
    }
    karpy.apply(template)
    try:
        ctrl = karpy.start(
            "replica-a",
            "--cloud-provider", "aws", "--aws-region", REGION, "--aws-endpoint-url", endpoint,
            "--aws-node-label", "kwok.x-k8s.io/node=fake", "--aws-cluster-endpoint", "https://127.0.0.1:6443",
        )  # fmt: skip
        until(lambda: readyz(ctrl)[0] == 503 and "EndpointConnectionError" in readyz(ctrl)[1], 30, "not ready")
        karpy.deployment("web", 2, cpu="1", memory="1Gi")
        until(lambda: karpy.events("CloudProviderUnavailable"), 30, "an event on the Provisioner")
        event = karpy.events("CloudProviderUnavailable")[0]
        assert event["involvedObject"]["kind"] == "Provisioner" and "EndpointConnectionError" in event["message"]
        assert 'karpy_cloudprovider_ready{provider="aws"} 0.0' in ctrl.get("/metrics")
        # many retry passes later: still up, still not ready, nothing launched, the pods pending
        until(lambda: len(karpy.pods("web")) == 2, 30, "the pods created")
        unschedulable = until(lambda: all(unschedulable_mark(p) for p in karpy.pods("web")), 30, "marked")
        assert unschedulable
        holds(lambda: karpy.nodes() == [] and procs.alive(ctrl.proc), 12, "nothing launched, the controller up")
        status = ctrl.status()
        assert not status["cloud"]["ready"] and "EndpointConnectionError" in status["cloud"]["problem"]
        assert procs.alive(ctrl.proc), "the controller exited"
        assert karpy.nodes() == [] and karpy.running("web") == []

        moto = late_moto.start()
        make_account(moto)
        until(lambda: readyz(ctrl) == (200, "ok"), 60, "ready once the cloud answers")
        until(lambda: len(karpy.running("web")) == 2, 90, "the pods Running on moto instances")
        assert all(n["spec"]["providerID"].startswith("aws:///us-east-1") for n in karpy.nodes())
        assert 'karpy_cloudprovider_ready{provider="aws"} 1.0' in ctrl.get("/metrics")
        assert procs.alive(ctrl.proc)
    finally:
        karpy.kube.delete(AWSNODETEMPLATES, "default")
