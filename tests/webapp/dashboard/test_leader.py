"""The dashboard asks the controller leader (found through its Lease), else the Service."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.clock import FakeClock
from controller.decisions import LAUNCHED, Decision, DecisionLog
from controller.httpserver import ControllerHTTPServer
from controller.kube.errors import NotFoundError
from controller.kube.resources import Kind
from localcluster.procs import free_port
from webapp.dashboard import reader
from webapp.dashboard.leader import LeaderLocator, leader_url
from webapp.dashboard.reader import ControllerAPI
from webapp.dashboard.source import ask_controller
from webapp.settings import WebappSettings


class Reads:
    """`get` over a dict keyed by (kind, namespace, name)."""

    def __init__(self, objs: dict[tuple[str, str, str], dict[str, Any]]) -> None:
        self.objs = objs

    def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
        try:
            return self.objs[(kind.name, namespace or "", name)]
        except KeyError:
            raise NotFoundError(f"{kind.name} {name} not found", 404) from None


def cluster(holder: str = "karpy-controller-b", ip: str = "127.0.0.2") -> Reads:
    lease = {"spec": {"holderIdentity": holder}} if holder else {"spec": {}}
    return Reads({
        ("leases", "karpy", "karpy-controller"): lease,
        ("pods", "karpy", "karpy-controller-b"): {"status": {"podIP": ip} if ip else {}},
    })  # fmt: skip


SERVICE = "http://karpy-controller.karpy.svc:8080"


def test_the_leaders_pod_ip_on_the_services_port() -> None:
    assert leader_url(cluster(), "karpy", "karpy-controller", SERVICE) == "http://127.0.0.2:8080"
    assert leader_url(cluster(ip="fd00::7"), "karpy", "karpy-controller", SERVICE) == "http://[fd00::7]:8080"


@pytest.mark.parametrize(
    "reads",
    [cluster(holder=""), cluster(holder="gone-pod"), cluster(ip=""), cluster(ip="not-an-ip"), Reads({})],
    ids=["no holder", "holder pod gone", "no pod IP", "bad pod IP", "no lease"],
)
def test_the_service_when_the_leader_cannot_be_told(reads: Reads) -> None:
    assert leader_url(reads, "karpy", "karpy-controller", SERVICE) == SERVICE


@pytest.fixture
def replicas() -> Iterator[tuple[int, ControllerHTTPServer]]:
    """A leader on 127.0.0.2 with a decision, a standby on 127.0.0.1 without, on one port."""
    port = free_port()
    acted = DecisionLog(FakeClock())
    acted.record(Decision("provisioning", LAUNCHED, "node/n1", "pods did not fit", price=0.1))
    answers: dict[str, Callable[[], Any]] = {
        "/api/v1/nodes": lambda: {"nodes": {}},
        "/api/v1/pods/pending": lambda: {"pods": {}},
    }
    leader = ControllerHTTPServer("127.0.0.2", port, acted, lambda: {"leader": True}, answers)
    standby = ControllerHTTPServer("127.0.0.1", port, DecisionLog(FakeClock()), lambda: {}, answers)
    leader.start()
    standby.start()
    try:
        yield port, leader
    finally:
        leader.stop()
        standby.stop()


def test_the_dashboard_reads_the_leaders_decisions_and_the_service_when_it_is_down(
    replicas: tuple[int, ControllerHTTPServer],
) -> None:
    port, leader = replicas
    service = f"http://127.0.0.1:{port}"
    assert ask_controller(ControllerAPI(service)).decisions == ()  # the standby's log is empty
    locate = LeaderLocator(cluster(), "karpy/karpy-controller", service, FakeClock().now)
    api = ControllerAPI(service, timeout=1, locate=locate)
    assert [d["subject"] for d in ask_controller(api).decisions] == ["node/n1"]
    leader.stop()
    got = ask_controller(api)
    assert got.error == "" and got.decisions == ()  # answered by the Service


def test_a_holder_that_is_no_pod_name_is_not_looked_up() -> None:
    """Issue 20, defect 8: the holder went unescaped into the API path of a pod `get`."""
    asked: list[str] = []

    class Recording(Reads):
        def get(self, kind: Kind, name: str, namespace: str | None = None) -> dict[str, Any]:
            asked.append(f"{kind.name}/{name}")
            return super().get(kind, name, namespace)

    for holder in ("../../secrets/karpy-webhook-cert", "a/b", "UPPER", "x" * 254, "pod\n"):
        reads = Recording(cluster(holder=holder).objs)
        assert leader_url(reads, "karpy", "karpy-controller", SERVICE) == SERVICE
    assert all(a.startswith("leases/") for a in asked), asked


def test_an_oversized_answer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20, defect 8: the leader's answer was read whole, however large."""
    monkeypatch.setattr(reader, "MAX_ANSWER_BYTES", 4096)
    answers: dict[str, Callable[[], Any]] = {"/api/v1/nodes": lambda: {"nodes": {f"n{i}": {} for i in range(2000)}}}
    srv = ControllerHTTPServer("127.0.0.1", 0, DecisionLog(FakeClock()), lambda: {}, answers)
    srv.start()
    try:
        with pytest.raises(reader.ControllerError, match="over"):
            ControllerAPI(f"http://127.0.0.1:{srv.port}").get("/api/v1/nodes")
        assert ControllerAPI(f"http://127.0.0.1:{srv.port}").get("/api/v1/status") == {}
    finally:
        srv.stop()


def test_the_lease_flag_is_checked() -> None:
    with pytest.raises(ValueError, match="NAMESPACE/NAME"):
        WebappSettings.from_env(controller_url=SERVICE, controller_lease="just-a-name")
    with pytest.raises(ValueError, match="needs --controller-url"):
        WebappSettings.from_env(controller_lease="karpy/karpy-controller")
    assert WebappSettings.from_env(controller_url=SERVICE, controller_lease="karpy/x").controller_lease == "karpy/x"
