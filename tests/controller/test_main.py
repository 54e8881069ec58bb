"""Process wiring: one job per controller, and only the leader's jobs act."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from controller.clock import FakeClock
from controller.cloudprovider.base import NodeRequest
from controller.cloudprovider.errors import CloudProviderError
from controller.configwait import ConfigWait
from controller.core.requirements import Requirements
from controller.decisions import Decision
from controller.deprovisioning.controller import DeprovisioningController
from controller.kube.errors import KubeError
from controller.kube.resources import CONFIGMAPS, NODES
from controller.main import ConfigError, build, configure, job_body, store_savings_before_hand_over
from controller.settings import CLUSTER_NAME_REQUIRED, Settings
from tests.builders.wire import make_node
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube


class Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.calls = 0

    def reconcile(self) -> None:
        self.calls += 1


def test_build_wires_one_job_per_controller() -> None:
    clock = FakeClock()
    app = build(Settings(), kube=FakeKube(clock), cloud=FakeCloudProvider(clock=clock), clock=clock)
    names = [j.controller.name for j in app.jobs]
    assert names == [
        "settings",
        "provisioning",
        "counter",
        "node.initialization",
        "metrics.pods",
        "node.termination",
        "garbagecollection",
        "deprovisioning",
        "savings",
    ]


def test_karpenter_global_settings_reach_the_batcher_at_build_and_on_change() -> None:
    clock = FakeClock()
    kube = FakeKube(clock)
    meta = {"name": "karpenter-global-settings", "namespace": "karpy"}
    kube.put(CONFIGMAPS, {"metadata": meta, "data": {"batchIdleDuration": "3s", "batchMaxDuration": "30s"}})
    app = build(Settings(settings_namespace="karpy"), kube=kube, cloud=FakeCloudProvider(clock=clock), clock=clock)
    batcher = app.provisioning.batcher
    assert (batcher.idle, batcher.max_duration) == (3.0, 30.0)  # before any job runs
    kube.put(CONFIGMAPS, {"metadata": meta, "data": {"batchIdleDuration": "2s"}})
    assert app.settings_watch is not None
    app.settings_watch.reconcile()
    assert (batcher.idle, batcher.max_duration) == (2.0, 10.0)
    kube.put(CONFIGMAPS, {"metadata": meta, "data": {"batchIdleDuration": "later"}})
    app.settings_watch.reconcile()
    assert (batcher.idle, batcher.max_duration) == (2.0, 10.0)
    assert "batchIdleDuration" in app.status()["settingsProblem"]


def test_the_drift_switch_follows_karpenter_global_settings() -> None:
    clock = FakeClock()
    kube = FakeKube(clock)
    meta = {"name": "karpenter-global-settings", "namespace": "karpy"}
    kube.put(CONFIGMAPS, {"metadata": meta, "data": {"featureGates.driftEnabled": "true"}})
    app = build(Settings(settings_namespace="karpy"), kube=kube, cloud=FakeCloudProvider(clock=clock), clock=clock)
    (deprovisioning,) = [j.controller for j in app.jobs if j.controller.name == "deprovisioning"]
    assert isinstance(deprovisioning, DeprovisioningController)
    assert deprovisioning.drift.enabled and deprovisioning.settings.drift_enabled
    kube.put(CONFIGMAPS, {"metadata": meta, "data": {"featureGates.driftEnabled": "false"}})
    assert app.settings_watch is not None
    app.settings_watch.reconcile()
    assert not deprovisioning.drift.enabled and not deprovisioning.settings.drift_enabled


def test_the_consolidation_order_reaches_the_deprovisioning_controller() -> None:
    clock = FakeClock()
    settings = Settings(consolidation_order="value")
    app = build(settings, kube=FakeKube(clock), cloud=FakeCloudProvider(clock=clock), clock=clock)
    (deprovisioning,) = [j.controller for j in app.jobs if j.controller.name == "deprovisioning"]
    assert isinstance(deprovisioning, DeprovisioningController)
    assert deprovisioning.settings.consolidation_order == "value"


def test_a_deprovisioning_module_that_cannot_be_imported_stops_the_controller_at_start() -> None:
    """Bug 5: an ImportError was caught and logged, shipping a controller that never consolidates."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["controller.deprovisioning.controller"] = None  # this module now fails to import
        from controller.clock import FakeClock
        from controller.main import build
        from controller.settings import Settings
        from tests.fakes.cloudprovider import FakeCloudProvider
        from tests.fakes.kube import FakeKube
        clock = FakeClock()
        app = build(Settings(), kube=FakeKube(clock), cloud=FakeCloudProvider(clock=clock), clock=clock)
        print([j.controller.name for j in app.jobs])
        """
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=repo, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode != 0, done.stdout
    assert "ModuleNotFoundError" in done.stderr
    assert "controller.deprovisioning.controller" in done.stderr


def test_jobs_act_only_while_leading() -> None:
    clock = FakeClock()
    app = build(Settings(), kube=FakeKube(clock), cloud=FakeCloudProvider(clock=clock), clock=clock)
    rec = Recorder()
    body = job_body(app, rec)
    body()
    assert rec.calls == 0  # not leader yet
    assert app.elector is not None and app.elector.step()
    body()
    assert rec.calls == 1
    app.stop.set()
    body()
    assert rec.calls == 1  # shutting down: no new action starts


def test_a_leader_shutting_down_stores_the_savings_it_owes_before_letting_the_lease_go() -> None:
    clock = FakeClock()
    kube = FakeKube(clock)
    app = build(Settings(), kube=kube, cloud=FakeCloudProvider(clock=clock), clock=clock)
    carried_out = Decision("deprovisioning", "consolidation/delete", "node/a", "consolidation: delete",
                           price_before=0.4, price_after=0.0, time=clock.now(), extra={"nodes": ["a"]})  # fmt: skip
    app.decisions.record(carried_out)
    store_savings_before_hand_over(app)  # not leading: a standby writes nothing
    assert kube.find(CONFIGMAPS, app.savings.configmap, app.savings.namespace) is None
    assert app.elector is not None and app.elector.step()
    app.stop.set()  # shutting down: the job itself would no longer run
    store_savings_before_hand_over(app)
    stored = kube.get(CONFIGMAPS, app.savings.configmap, app.savings.namespace)["data"]["savings.json"]
    assert [e["nodes"] for e in json.loads(stored)] == [["a"]]
    assert app.savings.answer()["persisted"] is True


def test_a_jobs_cloud_calls_are_timed_under_its_name() -> None:
    clock = FakeClock()
    app = build(Settings(), kube=FakeKube(clock), cloud=FakeCloudProvider(clock=clock), clock=clock)
    assert app.elector is not None and app.elector.step()
    labels = {"controller": "lister", "method": "List", "provider": "fake"}
    before = REGISTRY.get_sample_value("karpenter_cloudprovider_duration_seconds_count", labels) or 0.0

    class Lister:
        name = "lister"

        def reconcile(self) -> None:
            app.cloud.list()

    job_body(app, Lister())()
    assert REGISTRY.get_sample_value("karpenter_cloudprovider_duration_seconds_count", labels) == before + 1


def test_aws_provider_jobs_refresh_and_interruption(tmp_path: Path) -> None:
    clock = FakeClock()
    settings = Settings(
        cloud_provider="aws",
        aws_region="us-east-1",
        aws_endpoint_url="http://127.0.0.1:9",
        aws_interruption_queue="q",
        aws_tags='{"team": "infra"}',
        cluster_name="prod",
    )
    app = build(settings, kube=FakeKube(clock), clock=clock)
    assert app.cloud.name == "aws"
    names = [j.controller.name for j in app.jobs]
    assert "aws.refresh" in names and "interruption" in names
    assert app.cloud.settings.tags == {"team": "infra"}  # type: ignore[attr-defined]
    assert app.cloud.settings.cluster_name == "prod"  # type: ignore[attr-defined]
    bad = tmp_path / "prices.json"
    bad.write_text("{}")
    with pytest.raises(ConfigError, match=r"prices\.json"):
        build(Settings(cloud_provider="aws", aws_region="us-east-1", aws_price_file=str(bad)), kube=FakeKube(clock))


def test_the_aws_provider_refuses_to_start_without_a_cluster_name() -> None:
    """Karpenter v0.31 requires aws.clusterName: no flag, no variable and no ConfigMap key is an error
    saying where to set it, never a made-up name on the instances."""
    clock = FakeClock()
    aws = Settings(cloud_provider="aws", aws_region="us-east-1", aws_endpoint_url="http://127.0.0.1:9",
                   settings_namespace="karpy")  # fmt: skip
    kube = FakeKube(clock)
    with pytest.raises(ConfigError, match=r"cluster-name: required with --cloud-provider aws .*aws\.clusterName"):
        build(aws, kube=kube, clock=clock)
    meta = {"name": "karpenter-global-settings", "namespace": "karpy"}
    configmap = {"metadata": meta, "data": {"aws.clusterName": ""}}
    kube.put(CONFIGMAPS, configmap)
    with pytest.raises(ConfigError, match=r"aws\.clusterName: clusterName is required"):
        build(aws, kube=kube, clock=clock)
    kube.put(CONFIGMAPS, {**configmap, "data": {"aws.clusterName": "from-configmap"}})
    app = build(aws, kube=kube, clock=clock)
    assert app.cloud.settings.cluster_name == "from-configmap"  # type: ignore[attr-defined]
    # the simulated cloud needs no real cluster: it runs as "karpy" when none is set
    sim = build(Settings(), kube=FakeKube(clock), clock=clock)
    assert sim.cloud.name == "simulated" and sim.settings.cluster_name == ""


def test_without_a_cluster_name_the_controller_waits_for_the_configmap_then_starts() -> None:
    """No crash loop: `configure` holds the problem (served as not ready), re-reads
    karpenter-global-settings each poll and builds the controller once aws.clusterName is there."""
    clock = FakeClock()
    kube = FakeKube(clock)
    aws = Settings(cloud_provider="aws", aws_region="us-east-1", aws_endpoint_url="http://127.0.0.1:9",
                   settings_namespace="karpy")  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        build(aws, kube=kube, clock=clock)
    assert refused.value.by_settings
    meta = {"name": "karpenter-global-settings", "namespace": "karpy"}
    served: list[str] = []
    pauses: list[float] = []

    def pause(seconds: float) -> bool:
        pauses.append(seconds)
        if len(pauses) == 2:  # an invalid ConfigMap: still waiting, now saying what is wrong with it
            kube.put(CONFIGMAPS, {"metadata": meta, "data": {"aws.clusterName": ""}})
        if len(pauses) == 3:
            assert "aws.clusterName: clusterName is required" in waiting.problem
            kube.put(CONFIGMAPS, {"metadata": meta, "data": {"aws.clusterName": "from-configmap"}})
        clock.step(seconds)
        return False

    waiting = ConfigWait(clock)
    app = configure(aws, kube, clock, pause, waiting, lambda w: served.append(w.unavailable()))
    assert app is not None and app.cloud.settings.cluster_name == "from-configmap"  # type: ignore[attr-defined]
    assert served == ["not configured: " + CLUSTER_NAME_REQUIRED]  # served once, at the first problem
    assert pauses == [2.0, 2.0, 2.0]
    # nothing written while waiting: the ConfigMap is the test's; the events are the two failed
    # builds' (the one above and configure's first), none from the polls
    assert {kind for _, kind, _, _ in kube.log} == {"configmaps"}
    assert [e["reason"] for e in kube.events] == ["InvalidSettings"] * 2


def test_a_problem_only_a_flag_fixes_waits_until_stopped(tmp_path: Path) -> None:
    clock = FakeClock()
    bad = tmp_path / "prices.json"
    bad.write_text("{}")
    settings = Settings(cloud_provider="aws", aws_region="us-east-1", aws_price_file=str(bad), cluster_name="c")
    pauses: list[float] = []

    def pause(seconds: float) -> bool:
        pauses.append(seconds)
        return len(pauses) == 4  # SIGTERM during the fourth pause

    waiting = ConfigWait(clock)
    assert configure(settings, FakeKube(clock), clock, pause, waiting, lambda w: None) is None
    assert len(pauses) == 4 and "prices.json" in waiting.problem and waiting.check is None


def test_aws_settings_need_a_region_and_valid_tags() -> None:
    with pytest.raises(ValueError, match="aws-region: required"):
        Settings.from_args(environ={"KARPY_CLOUD_PROVIDER": "aws"})
    assert (
        Settings.from_args(environ={"KARPY_CLOUD_PROVIDER": "aws", "AWS_REGION": "eu-west-1"}).aws_region == "eu-west-1"
    )
    with pytest.raises(ValueError, match="aws-tags"):
        Settings.from_args(environ={"KARPY_AWS_TAGS": "[1]"})


def test_a_reconcile_that_outlives_leadership_writes_nothing_more() -> None:
    # issue 14, item 5: leadership lost in the middle of a reconcile must stop its writes
    clock = FakeClock()
    kube, cloud = FakeKube(clock), FakeCloudProvider(clock=clock)
    app = build(Settings(), kube=kube, cloud=cloud, clock=clock)
    assert app.elector is not None and app.elector.step()
    refused: list[Exception] = []

    class LosesLeadershipMidway:
        name = "midway"

        def reconcile(self) -> None:
            app.kube.create(NODES, make_node("before"))
            clock.step(9)  # no renewal for 9 s: past the renew deadline (the lease ends at 10 s)
            for write in (
                lambda: app.kube.create(NODES, make_node("after")),
                lambda: app.kube.delete(NODES, "before"),
                lambda: app.cloud.create(NodeRequest("default", Requirements(), ())),
                lambda: app.cloud.delete("fake:///us-west-2a/before"),
            ):
                try:
                    write()
                except (KubeError, CloudProviderError) as err:
                    refused.append(err)

    job_body(app, LosesLeadershipMidway())()
    assert len(refused) == 4
    assert [n["metadata"]["name"] for n in kube.list(NODES).items] == ["before"]
    assert cloud.create_calls == [] and cloud.delete_calls == []
    assert app.kube.get(NODES, "before")  # reads still work


def test_the_simulated_cloud_takes_its_instance_types_from_a_catalog_file(tmp_path: Path) -> None:
    clock = FakeClock()
    catalog = tmp_path / "catalog.json"
    catalog.write_text(
        '{"instanceTypes": [{"name": "c-2x-amd64-linux", "capacity": {"cpu": "2", "memory": "4Gi", "pods": "110"},'
        ' "overhead": {"cpu": "100m", "memory": "10Mi"},'
        ' "offerings": [{"zone": "test-zone-a", "capacityType": "on-demand", "price": 0.05}]}]}'
    )
    settings = Settings(simulated_db=str(tmp_path / "cloud.db"), simulated_catalog=str(catalog))
    app = build(settings, kube=FakeKube(clock), clock=clock)
    types = app.cloud.get_instance_types()
    assert [it.name for it in types] == ["c-2x-amd64-linux"]
    assert types[0].overhead["cpu"] == 100 and types[0].offerings[0].price == 0.05
    for text, problem in (("{}", "instanceTypes"), ('{"instanceTypes": []}', "no instance types"), ("[", "")):
        catalog.write_text(text)
        with pytest.raises(ConfigError, match=rf"simulated-catalog: .*catalog\.json.*{problem}"):
            build(settings, kube=FakeKube(clock), clock=clock)
    with pytest.raises(ConfigError, match=r"simulated-catalog: .*missing"):
        build(Settings(simulated_catalog=str(tmp_path / "missing.json")), kube=FakeKube(clock), clock=clock)
