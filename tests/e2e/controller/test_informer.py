"""End to end: informers list page by page against kube-apiserver (issue 21, `state/informer.py`).

On the session's control plane: a list asked with `limit` comes in pages that hold every pod once,
all at the first page's resourceVersion; an informer listing three pods a page holds every pod of
the namespace and, watching from the paged list's resourceVersion, the one created after. A
continue token whose resourceVersion etcd has compacted away answers 410 (`GoneError`), and an
informer whose next page expires that way lists everything at once and carries on.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from controller.clock import SystemClock
from controller.kube.client import Kube, ListResult
from controller.kube.errors import GoneError, NotFoundError
from controller.kube.resources import PODS, Kind
from controller.state.cluster import ClusterState
from controller.state.informer import Informer
from localcluster import LocalCluster
from tests.e2e.env import KarpyEnv
from tests.support.poll import until

pytestmark = pytest.mark.e2e

SERVICEACCOUNTS = Kind("serviceaccounts", "v1", "serviceaccounts", True)


def pod(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "paged"}},
        "spec": {"schedulerName": "karpy-e2e-nobody", "containers": [{"name": "c", "image": "x"}]},
    }


def create_pods(karpy: KarpyEnv, names: list[str]) -> None:
    def service_account() -> bool:
        try:
            karpy.kube.get(SERVICEACCOUNTS, "default", karpy.namespace)
        except NotFoundError:
            return False
        return True

    until(service_account, 30, "the namespace's default ServiceAccount")
    for name in names:
        karpy.kube.create(PODS, pod(name, karpy.namespace), karpy.namespace)


def compact_etcd(cluster: LocalCluster) -> None:
    """Compact etcd at its current revision (what its periodic compaction does, now)."""
    state = cluster.state
    assert state is not None
    base = f"http://127.0.0.1:{state.ports['etcd']}/v3/kv"

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(f"{base}/{path}", json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            answer: dict[str, Any] = json.loads(resp.read())
        return answer

    revision = post("range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"]
    post("compaction", {"revision": revision, "physical": True})


class Paged:
    """The real client, recording each list it is asked; `after_first_page` runs once a first page
    is answered (to expire its continue token)."""

    def __init__(self, kube: Kube, after_first_page: Any = None) -> None:
        self.kube, self.after_first_page = kube, after_first_page
        self.lists: list[tuple[int, bool]] = []

    def list(self, kind: Kind, limit: int = 0, continue_token: str = "") -> ListResult:
        self.lists.append((limit, bool(continue_token)))
        result = self.kube.list(kind, limit, continue_token)
        if not continue_token and result.continue_token and self.after_first_page is not None:
            self.after_first_page()
            self.after_first_page = None
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kube, name)


@pytest.fixture
def informer_of(karpy: KarpyEnv) -> Iterator[Any]:
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(kube: Any) -> ClusterState:
        state = ClusterState(SystemClock(), kinds=[PODS.name])
        informer = Informer(kube, PODS, state, stop, watch_timeout=5, page_size=3)  # short watches: a quick teardown
        thread = threading.Thread(target=informer.run, daemon=True)
        thread.start()
        threads.append(thread)
        return state

    yield start
    stop.set()
    for thread in threads:
        thread.join(timeout=15)


def ours(state: ClusterState, namespace: str) -> set[str]:
    return {p.name for p in state.snapshot().pods.values() if p.namespace == namespace}


def test_a_paged_list_holds_every_pod_once_at_one_resource_version(karpy: KarpyEnv) -> None:
    names = [f"paged-{i}" for i in range(7)]
    create_pods(karpy, names)
    pages: list[ListResult] = [karpy.kube.list(PODS, limit=3)]
    while pages[-1].continue_token:
        pages.append(karpy.kube.list(PODS, limit=3, continue_token=pages[-1].continue_token))
    seen = [o["metadata"]["name"] for p in pages for o in p.items if o["metadata"]["namespace"] == karpy.namespace]
    assert sorted(seen) == names
    assert len(pages) >= 3 and all(len(p.items) <= 3 for p in pages)
    assert {p.resource_version for p in pages} == {pages[0].resource_version}


def test_an_informer_lists_page_by_page_then_watches(karpy: KarpyEnv, informer_of: Any) -> None:
    names = [f"paged-{i}" for i in range(7)]
    create_pods(karpy, names)
    kube = Paged(karpy.kube)
    state = informer_of(kube)
    until(lambda: ours(state, karpy.namespace) == set(names), 30, "the informer to hold the 7 pods")
    assert len(kube.lists) >= 3 and all(limit == 3 for limit, _ in kube.lists)
    create_pods(karpy, ["after"])
    until(lambda: "after" in ours(state, karpy.namespace), 30, "the pod created after the list, by watch")


def test_an_expired_continue_token_is_gone_and_the_informer_lists_whole(
    karpy: KarpyEnv, local_cluster: LocalCluster, informer_of: Any
) -> None:
    names = [f"paged-{i}" for i in range(7)]
    create_pods(karpy, names)
    first = karpy.kube.list(PODS, limit=3)
    karpy.kube.patch(PODS, names[0], {"metadata": {"labels": {"touched": "yes"}}}, karpy.namespace)
    compact_etcd(local_cluster)
    with pytest.raises(GoneError):
        karpy.kube.list(PODS, limit=3, continue_token=first.continue_token)

    def expire() -> None:
        karpy.kube.patch(PODS, names[1], {"metadata": {"labels": {"touched": "yes"}}}, karpy.namespace)
        compact_etcd(local_cluster)

    kube = Paged(karpy.kube, after_first_page=expire)
    state = informer_of(kube)
    until(lambda: ours(state, karpy.namespace) == set(names), 30, "the informer to hold the 7 pods")
    assert kube.lists[:3] == [(3, False), (3, True), (0, False)]  # the expired page, then one whole list
