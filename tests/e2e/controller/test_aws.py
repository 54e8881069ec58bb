"""End to end on EC2 as moto serves it: `karpy controller --cloud-provider aws` (issue 10).

The controller talks to a real moto_server (boto3 over HTTP) and the real local control plane:
pending pods → CreateFleet on moto → a Node with the `aws:///<zone>/<id>` provider ID, which kwok
manages through the `--aws-node-label` → pods Running; a spot interruption warning sent through
EventBridge (rule → SQS queue) drains its node and the pods run elsewhere; a leaked instance
of karpy's is garbage-collected; with drift on, selecting another AMI replaces every node, one at
a time, by instances of that AMI; scaling to zero terminates the moto instances. Beside Karpenter
(issue 19): its instance and launch template, with Karpenter's tags and no Node yet, survive many
garbage-collection and launch-template-cleanup periods while karpy's own leak and unused
template are collected.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.clock import SystemClock
from controller.cloudprovider.aws.api import AWSApi, Boto3Transport
from controller.cloudprovider.aws.fleet import OWNERSHIP_TAG
from controller.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings
from controller.core import labels as L
from controller.kube.errors import NotFoundError
from controller.kube.resources import AWSNODETEMPLATES, LEASES
from localcluster import procs
from tests.controller.cloudprovider.aws.builders import DISCOVERY, Account, make_account
from tests.controller.cloudprovider.aws.test_provider_moto import karpenter_instance, karpenter_launch_template
from tests.e2e.env import FAST, Controller, KarpyEnv
from tests.support.moto import REGION, MotoServer
from tests.support.poll import until

pytestmark = pytest.mark.e2e

QUEUE = "karpy-interruption"
TYPES = {"key": L.INSTANCE_TYPE, "operator": "In", "values": ["m5.large", "m5.xlarge", "c5.xlarge"]}


@pytest.fixture
def aws(karpy: KarpyEnv, moto_server: MotoServer) -> Iterator[tuple[Account, AWSCloudProvider]]:
    account = make_account(moto_server)
    sqs, events = moto_server.client("sqs"), moto_server.client("events")
    url = sqs.create_queue(QueueName=QUEUE)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="karpy-interruption", EventPattern=json.dumps({"source": ["aws.ec2", "aws.health"]}))
    events.put_targets(Rule="karpy-interruption", Targets=[{"Id": "queue", "Arn": arn}])
    karpy.apply(template({"karpy-test": "eks"}))
    api = AWSApi(Boto3Transport(REGION, moto_server.url))
    cloud = AWSCloudProvider(api, AWSSettings(region=REGION, cluster_name=karpy.namespace), SystemClock())
    try:
        yield account, cloud
    finally:
        karpy.kube.delete(AWSNODETEMPLATES, "default")


def template(amis: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.k8s.aws/v1alpha1",
        "kind": "AWSNodeTemplate",
        "metadata": {"name": "default"},
        "spec": {"subnetSelector": DISCOVERY, "securityGroupSelector": DISCOVERY, "amiSelector": amis},
    }


def start(karpy: KarpyEnv, moto: MotoServer, *extra: str) -> Controller:
    return karpy.start(
        "replica-a",
        *FAST,
        "--cloud-provider",
        "aws",
        "--aws-region",
        REGION,
        "--aws-endpoint-url",
        moto.url,
        "--aws-node-label",
        "kwok.x-k8s.io/node=fake",
        "--aws-interruption-queue",
        QUEUE,
        "--aws-cluster-endpoint",
        "https://127.0.0.1:6443",
        "--gc-interval-seconds",
        "1",
        "--gc-leak-seconds",
        "5",
        *extra,
    )


def node_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"].get("nodeName", ""))


def test_pods_run_on_moto_instances_interruption_drains_leaks_are_collected_scale_to_zero_terminates(
    karpy: KarpyEnv, moto_server: MotoServer, aws: tuple[Account, AWSCloudProvider]
) -> None:
    account, cloud = aws
    karpy.provisioner(providerRef={"name": "default"}, requirements=[TYPES], ttlSecondsAfterEmpty=2)
    ctrl = start(karpy, moto_server, "--drift-enabled")
    karpy.deployment("web", 4, cpu="1", memory="1Gi")
    until(lambda: len(karpy.running("web")) == 4, 90, "4 pods Running on moto instances")
    nodes = karpy.nodes()
    assert nodes and all(n["spec"]["providerID"].startswith("aws:///us-east-1") for n in nodes)
    assert all(n["metadata"]["name"].startswith("ip-") for n in nodes)
    assert all(n["metadata"]["labels"][L.INSTANCE_TYPE] in TYPES["values"] for n in nodes)
    assert {i.provider_id for i in cloud.list()} == {n["spec"]["providerID"] for n in nodes}
    ec2 = moto_server.client("ec2")
    fleets = ec2.describe_fleets()["Fleets"]
    assert fleets and all(f["Type"] == "instant" for f in fleets)

    # a spot interruption warning through EventBridge → SQS drains that node; its pods run elsewhere
    victim = next(node_of(p) for p in karpy.running("web"))
    victim_pid = next(n["spec"]["providerID"] for n in nodes if n["metadata"]["name"] == victim)
    detail = {"instance-id": victim_pid.rsplit("/", 1)[-1], "instance-action": "terminate"}
    entry = {"Source": "aws.ec2", "DetailType": "EC2 Spot Instance Interruption Warning", "Detail": json.dumps(detail)}
    before = {n["metadata"]["name"] for n in karpy.nodes()}
    assert moto_server.client("events").put_events(Entries=[entry])["FailedEntryCount"] == 0
    # the replacement is launched first: when the victim starts draining, a new node is Ready
    ready_new_at_drain: list[set[str]] = []

    def drained() -> bool:
        current = karpy.nodes()
        mine = [n for n in current if n["metadata"]["name"] == victim]
        if not ready_new_at_drain and (not mine or mine[0]["metadata"].get("deletionTimestamp")):
            ready_new_at_drain.append({n["metadata"]["name"] for n in current if n["metadata"]["name"] not in before
                                       and any(c["type"] == "Ready" and c["status"] == "True"
                                               for c in n["status"].get("conditions") or [])})  # fmt: skip
        return not mine

    until(drained, 90, "the interrupted node to go")
    assert ready_new_at_drain and ready_new_at_drain[0], "the interrupted node was drained before its replacement"
    until(lambda: len([p for p in karpy.running("web") if node_of(p) != victim]) == 4, 90, "the pods running elsewhere")
    until(lambda: victim_pid not in {i.provider_id for i in cloud.list()}, 30, "the interrupted instance gone")
    assert any(e["reason"] == "NodeTerminatingOnInterruption" for e in karpy.events("NodeTerminatingOnInterruption"))
    # counted as Karpenter counts it, under its names: one warning received, timed, acted on, deleted
    metrics = str(ctrl.get("/metrics"))
    for series in ('karpenter_interruption_received_messages{message_type="SpotInterruptionKind"} 1.0',
                   'karpenter_interruption_actions_performed{action_type="CordonAndDrain"} 1.0',
                   'karpenter_nodes_terminated{provisioner="default",reason="interruption"} 1.0',
                   "karpenter_interruption_message_latency_time_seconds_count 1.0",
                   "karpenter_interruption_deleted_messages 1.0"):  # fmt: skip
        assert series + "\n" in metrics, series

    # a leaked instance of karpy's (its ownership tag, for this cluster) is terminated
    tags = [
        {"Key": f"kubernetes.io/cluster/{karpy.namespace}", "Value": "owned"},
        {"Key": L.PROVISIONER_NAME, "Value": "default"},
        {"Key": OWNERSHIP_TAG, "Value": karpy.namespace},
    ]
    leaked = ec2.run_instances(
        ImageId=account.amd64_ami,
        MinCount=1,
        MaxCount=1,
        InstanceType="m5.large",
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )["Instances"][0]["InstanceId"]
    until(lambda: leaked not in {i.provider_id.rsplit("/", 1)[-1] for i in cloud.list()}, 60, "the leak collected")

    # drift: another AMI selected → every node replaced, one at a time, by an instance of that AMI
    images = ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}])
    new_ami = next(i["ImageId"] for i in images["Images"] if i["ImageId"] != account.amd64_ami)
    assert {n["metadata"]["labels"][L.INSTANCE_AMI_ID] for n in karpy.nodes()} == {account.amd64_ami}
    karpy.apply(template({"aws-ids": new_ami}))
    most_disrupted = [0]

    def replaced() -> bool:
        current = karpy.nodes()
        moving = [n for n in current if n["metadata"]["labels"][L.INSTANCE_AMI_ID] != new_ami
                  and (n["metadata"].get("deletionTimestamp") or n["spec"].get("unschedulable"))]  # fmt: skip
        most_disrupted[0] = max(most_disrupted[0], len(moving))
        return (
            all(n["metadata"]["labels"][L.INSTANCE_AMI_ID] == new_ami for n in current)
            and len(karpy.running("web")) == 4
        )

    until(replaced, 150, "every node on the new AMI", interval=0.2)
    assert most_disrupted[0] == 1
    reservations = ec2.describe_instances(InstanceIds=[i.provider_id.rsplit("/", 1)[-1] for i in cloud.list()])
    assert {i["ImageId"] for r in reservations["Reservations"] for i in r["Instances"]} == {new_ami}

    # scale to zero: the empty nodes go and their moto instances are terminated
    karpy.scale("web", 0)
    until(lambda: not karpy.nodes(), 90, "every node deleted")
    until(lambda: not cloud.list(), 30, "every moto instance terminated")


def gc_passes(ctrl: Controller) -> float:
    for line in str(ctrl.get("/metrics")).splitlines():
        if line.startswith('controller_runtime_reconcile_total{controller="garbagecollection",result="success"}'):
            return float(line.rsplit(" ", 1)[-1])
    return 0.0


def test_karpenters_instance_and_launch_template_survive_while_karpys_leaks_are_collected(
    karpy: KarpyEnv, moto_server: MotoServer, aws: tuple[Account, AWSCloudProvider]
) -> None:
    account, cloud = aws
    ec2 = moto_server.client("ec2")
    karpenters = karpenter_instance(moto_server, account.amd64_ami, karpy.namespace)
    karpenter_lt = karpenter_launch_template(moto_server, account.amd64_ami, karpy.namespace)
    ours = [
        {"Key": f"kubernetes.io/cluster/{karpy.namespace}", "Value": "owned"},
        {"Key": L.PROVISIONER_NAME, "Value": "default"},
        {"Key": OWNERSHIP_TAG, "Value": karpy.namespace},
    ]
    (leak,) = ec2.run_instances(
        ImageId=account.amd64_ami, MinCount=1, MaxCount=1, InstanceType="m5.large",
        TagSpecifications=[{"ResourceType": "instance", "Tags": ours}],
    )["Instances"]  # fmt: skip
    karpy_lt = "karpy/0123456789abcdef0123"  # left by an earlier karpy, unused since
    ec2.create_launch_template(
        LaunchTemplateName=karpy_lt, LaunchTemplateData={"ImageId": account.amd64_ami},
        TagSpecifications=[{"ResourceType": "launch-template",
                            "Tags": [{"Key": "karpenter.k8s.aws/cluster", "Value": karpy.namespace},
                                     {"Key": OWNERSHIP_TAG, "Value": karpy.namespace}]}],
    )  # fmt: skip
    ctrl = start(karpy, moto_server, "--aws-launch-template-ttl-seconds", "2")

    def state(instance_id: str) -> str:
        found = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        return str(found["State"]["Name"])

    def templates() -> set[str]:
        return {lt["LaunchTemplateName"] for lt in ec2.describe_launch_templates()["LaunchTemplates"]}

    until(lambda: state(leak["InstanceId"]) == "terminated", 60, "karpy's leaked instance terminated")
    until(lambda: karpy_lt not in templates(), 60, "karpy's unused launch template deleted")
    passes = gc_passes(ctrl)
    until(lambda: gc_passes(ctrl) >= passes + 5, 60, "five more garbage-collection passes")
    assert state(karpenters) == "running"
    assert karpenter_lt in templates()
    assert [i.provider_id.rsplit("/", 1)[-1] for i in cloud.list()] == []


def put_settings(karpy: KarpyEnv, data: dict[str, str]) -> None:
    karpy.apply({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "karpenter-global-settings", "namespace": karpy.namespace}, "data": data,
    })  # fmt: skip


def instance_tags_of(moto: MotoServer, provider_id: str) -> dict[str, str]:
    found = moto.client("ec2").describe_instances(InstanceIds=[provider_id.rsplit("/", 1)[-1]])
    return {t["Key"]: t["Value"] for t in found["Reservations"][0]["Instances"][0].get("Tags") or []}


def answer(ctrl: Controller, path: str) -> tuple[int, str]:
    """(HTTP status, body) of a GET, keeping an error status instead of raising."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ctrl.port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_the_aws_controller_waits_for_a_cluster_name_then_starts(karpy: KarpyEnv, moto_server: MotoServer) -> None:
    """Karpenter v0.31 requires aws.clusterName. With no flag, no variable and no ConfigMap key the
    controller does not exit (a deployed one would crash-loop): it stays up, alive but not ready,
    its API answering 503 with where to set the name, touching neither the cluster nor the cloud;
    the ConfigMap's key then starts it — ready, its jobs running — with no restart."""
    ctrl = karpy.start(
        "replica-a", "--cloud-provider", "aws", "--aws-region", REGION, "--aws-endpoint-url", moto_server.url,
        "--settings-namespace", karpy.namespace, "--cluster-name", "",  # the env's own name unset again
        wait_ready=False,
    )  # fmt: skip
    needs = "not configured: cluster-name: required with --cloud-provider aws"
    until(lambda: needs in answer(ctrl, "/readyz")[1], 60, "readyz naming the missing cluster name")
    code, why = answer(ctrl, "/readyz")
    assert code == 503 and "aws.clusterName in the karpenter-global-settings ConfigMap" in why
    assert answer(ctrl, "/healthz") == (200, "ok")  # alive: a restart would not help
    code, body = answer(ctrl, "/api/v1/nodes")
    assert code == 503 and json.loads(body)["error"].startswith(needs)
    with pytest.raises(NotFoundError):  # no Lease taken: nothing acts
        karpy.kube.get(LEASES, karpy.lease, "kube-system")
    assert not moto_server.client("ec2").describe_instances()["Reservations"]
    put_settings(karpy, {"aws.clusterName": ""})  # a ConfigMap without the name: still waiting, saying so
    refused = "aws.clusterName: clusterName is required"
    until(lambda: refused in answer(ctrl, "/readyz")[1], 30, "the ConfigMap's problem")
    assert procs.alive(ctrl.proc)
    log = Path(ctrl.proc.log).read_text()
    assert log.count("not configured, not acting") == 2  # once per problem, not once per poll
    put_settings(karpy, {"aws.clusterName": "from-configmap"})
    until(lambda: answer(ctrl, "/readyz") == (200, "ok"), 60, "ready once the ConfigMap names the cluster")
    assert karpy.kube.get(LEASES, karpy.lease, "kube-system")["spec"]["holderIdentity"] == "replica-a"
    karpy.passes("provisioning")
    karpy.passes("settings")
    assert "cluster_name='from-configmap'" in Path(ctrl.proc.log).read_text()


def test_a_controller_waiting_on_a_flag_stops_at_sigterm(karpy: KarpyEnv) -> None:
    """A problem only a flag can fix (an unreadable --simulated-catalog) keeps the process up, not
    ready, until it is stopped — promptly."""
    ctrl = karpy.start("replica-a", "--simulated-catalog", str(karpy.tmp / "missing.json"), wait_ready=False)
    until(lambda: "not configured: simulated-catalog" in answer(ctrl, "/readyz")[1], 60, "readyz naming the flag")
    stopped = time.monotonic()
    procs.stop(ctrl.proc, grace_seconds=10)
    assert not procs.alive(ctrl.proc) and time.monotonic() - stopped < 5
    assert "stopped without being configured" in Path(ctrl.proc.log).read_text()


def test_karpenter_global_settings_change_a_running_controller(
    karpy: KarpyEnv, moto_server: MotoServer, aws: tuple[Account, AWSCloudProvider]
) -> None:
    """A Karpenter v0.31 user's ConfigMap drives the cluster name, tags, batch windows and the
    interruption queue; a change reaches the running controller; an invalid version is refused
    with an event and the last good settings stay."""
    account, _ = aws
    sqs = moto_server.client("sqs")
    queue_b = sqs.create_queue(QueueName="queue-b")["QueueUrl"]
    put_settings(karpy, {
        "aws.clusterName": "cm-a", "aws.tags": '{"team": "a"}', "batchIdleDuration": "1s",
        "batchMaxDuration": "5s", "aws.interruptionQueueName": QUEUE, "featureGates.driftEnabled": "false",
    })  # fmt: skip
    karpy.provisioner(providerRef={"name": "default"}, requirements=[TYPES])
    ctrl = karpy.start(
        "replica-a", "--cloud-provider", "aws", "--aws-region", REGION, "--aws-endpoint-url", moto_server.url,
        "--aws-node-label", "kwok.x-k8s.io/node=fake", "--aws-cluster-endpoint", "https://127.0.0.1:6443",
        "--cluster-name", "", "--settings-namespace", karpy.namespace,  # neither set: the ConfigMap decides
    )  # fmt: skip
    karpy.deployment("web", 1, cpu="1", memory="1Gi")
    until(lambda: len(karpy.running("web")) == 1, 90, "the first pod Running")
    (first,) = karpy.nodes()
    tags = instance_tags_of(moto_server, first["spec"]["providerID"])
    assert tags[OWNERSHIP_TAG] == "cm-a" and tags["kubernetes.io/cluster/cm-a"] == "owned" and tags["team"] == "a"

    put_settings(karpy, {
        "aws.clusterName": "cm-b", "aws.tags": '{"team": "b"}', "batchIdleDuration": "2s",
        "batchMaxDuration": "7s", "aws.interruptionQueueName": "queue-b",
    })  # fmt: skip
    log = Path(ctrl.proc.log)
    until(lambda: "cluster_name='cm-b'" in log.read_text(), 30, "the controller to take the new settings")
    changed = next(line for line in log.read_text().splitlines() if "cluster_name='cm-b'" in line)
    assert "batch_idle_seconds=2.0" in changed and "batch_max_seconds=7.0" in changed
    assert "aws_interruption_queue='queue-b'" in changed and "aws_tags=" in changed
    karpy.scale("web", 3)
    until(lambda: len(karpy.running("web")) == 3, 90, "the new pods Running")
    second = [n for n in karpy.nodes() if n["metadata"]["name"] != first["metadata"]["name"]]
    assert second
    for node in second:
        tags = instance_tags_of(moto_server, node["spec"]["providerID"])
        assert tags[OWNERSHIP_TAG] == "cm-b" and tags["kubernetes.io/cluster/cm-b"] == "owned"
        assert tags["team"] == "b" and "kubernetes.io/cluster/cm-a" not in tags

    # the interruption queue is now queue-b: a stop event there drains that node
    victim = second[0]
    detail = {"instance-id": victim["spec"]["providerID"].rsplit("/", 1)[-1], "state": "stopping"}
    event = {"source": "aws.ec2", "detail-type": "EC2 Instance State-change Notification", "detail": detail}
    sqs.send_message(QueueUrl=queue_b, MessageBody=json.dumps(event))
    until(lambda: karpy.node_gone(victim["metadata"]["name"]), 90, "the stopped node drained through queue-b")

    # an invalid version changes nothing and says why
    put_settings(karpy, {"aws.clusterName": "cm-c", "batchMaxDuration": "soon"})
    until(lambda: karpy.events("InvalidSettings"), 30, "an InvalidSettings event")
    problem = until(lambda: ctrl.status().get("settingsProblem"), 30, "the problem in the controller's status")
    assert "batchMaxDuration: invalid duration 'soon'" in problem
    assert ctrl.get("/api/v1/nodes")["settingsProblem"] == problem  # what the dashboard's banner shows
    assert "cluster_name='cm-c'" not in log.read_text()

    # the AWSNodeTemplate's status: what it resolves to, and why it is not Ready (no instance profile)
    def template_status() -> dict[str, Any]:
        return dict(karpy.kube.get(AWSNODETEMPLATES, "default").get("status") or {})

    status = until(lambda: template_status().get("subnets") and template_status(), 30, "the template's status")
    assert {s["zone"] for s in status["subnets"]} == set(account.subnets)
    (ready,) = status["conditions"]
    assert ready["status"] == "False" and "no instance profile" in ready["message"]
    table = karpy.cluster.kubectl("get", "awsnodetemplates", "default", "-o", "wide").stdout
    assert "READY" in table and "ZONES" in table and "False" in table
    assert any(zone in table for zone in account.subnets)  # kubectl shows the first subnet's zone
