"""End to end: the controller rides out a kube-apiserver restart (issue 5, item 1).

On a cluster of its own (restarting the session's apiserver would disturb the other tests), a
running `karpy controller` sees kube-apiserver stopped for a few seconds and started again with
the same command line (`LocalCluster.restart`). Its watches break, it re-lists, and it carries
on: the process is still there, synced and leading, and pods created afterwards — for a
Provisioner also created afterwards, so that every watch has to have come back — get new nodes
and run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster import LocalCluster, procs
from tests.e2e.env import Controller, karpy_env
from tests.support.poll import until

pytestmark = pytest.mark.e2e

DOWNTIME = 3.0


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("restart-cluster"))
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


def log_since(ctrl: Controller, offset: int) -> str:
    with open(ctrl.proc.log, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def test_after_an_apiserver_restart_new_pending_pods_get_nodes_and_run(
    own_cluster: LocalCluster, tmp_path: Path
) -> None:
    with karpy_env(own_cluster, tmp_path) as karpy:
        karpy.provisioner()
        ctrl = karpy.start("replica-a", "--batch-idle-seconds", "0.5")
        karpy.deployment("before", 3, cpu="1", memory="1Gi")
        until(lambda: len(karpy.running("before")) == 3, 30, "3 pods Running before the restart")
        before = {n["metadata"]["name"] for n in karpy.nodes()}
        offset = Path(ctrl.proc.log).stat().st_size

        restarted = time.monotonic()
        own_cluster.restart("kube-apiserver", downtime=DOWNTIME)
        print(f"kube-apiserver stopped and back in {time.monotonic() - restarted:.1f}s")
        assert procs.alive(ctrl.proc), "the controller exited when the apiserver went away"
        until(lambda: ctrl.status().get("synced") and ctrl.status().get("leader"), 30, "synced and leading again")
        assert "re-listing" in log_since(ctrl, offset), "no watch was lost: the restart did not reach the controller"

        # New objects of every kind the controller must see: a Provisioner, then pods only its nodes fit.
        karpy.provisioner("after", labels={"phase": "after"})
        karpy.deployment("after", 4, cpu="1", memory="1Gi", nodeSelector={"phase": "after"})
        created = time.monotonic()
        until(lambda: len(karpy.running("after")) == 4, 45, "the 4 new pods Running on new nodes")
        print(f"new pods Running {time.monotonic() - created:.1f}s after creation")
        new = {n["metadata"]["name"] for n in karpy.nodes() if n["metadata"]["labels"].get("phase") == "after"}
        assert new and not new & before
        assert {p["spec"]["nodeName"] for p in karpy.running("after")} <= new
        assert len(karpy.running("before")) == 3
        assert procs.alive(ctrl.proc)
        until(lambda: karpy.consistent() == "", 10, "every instance with a node and every node with an instance")
