"""The AWS provider against a real moto_server: discovery, resolution, launch, terminate, list."""

from __future__ import annotations

import base64
import dataclasses
import time

import pytest

from controller.cloudprovider.aws.fleet import OWNERSHIP_TAG
from controller.cloudprovider.aws.instancetypes import branch_interfaces
from controller.cloudprovider.aws.launchtemplates import CLUSTER_TAG
from controller.cloudprovider.aws.pricing import read_price_file
from controller.cloudprovider.aws.provider import instance_id_of
from controller.cloudprovider.aws.resolver import ResolutionError
from controller.cloudprovider.drift import DriftReason
from controller.cloudprovider.errors import NodeNotFoundError
from controller.core import labels as L
from controller.decisions import DecisionLog
from controller.garbagecollection.garbagecollection import GarbageCollectionController
from controller.kube.resources import NODES
from controller.scheduling.types import InstanceType
from controller.state.cluster import ClusterState
from tests.builders.scheduling import make_pod, run
from tests.builders.wire import make_node
from tests.controller.cloudprovider.aws.builders import CLUSTER, make_provider, make_request, make_template
from tests.fakes.kube import FakeKube
from tests.fakes.world import sync_from
from tests.support.moto import MotoServer


def by_name(types: tuple[InstanceType, ...], name: str) -> InstanceType:
    return next(it for it in types if it.name == name)


def test_discovery_real_types_priced_in_the_template_zones(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    assert env.provider.check_access() == ""  # the DryRun call is accepted
    types = env.provider.get_instance_types(None, make_template())
    assert len(types) > 300
    m5 = by_name(types, "m5.large")
    assert m5.labels[L.ARCH] == "amd64" and m5.labels[L.INSTANCE_CATEGORY] == "m"
    assert m5.labels[L.INSTANCE_GENERATION] == "5" and m5.labels[L.INSTANCE_CPU] == "2"
    assert m5.labels[L.INSTANCE_MEMORY] == "8192" and m5.labels[L.INSTANCE_PODS] == "29"  # 3 × (10 − 1) + 2
    assert {o.zone for o in m5.offerings} == {"us-east-1a", "us-east-1b"}  # the selected subnets' zones only
    od = [o for o in m5.offerings if o.capacity_type == L.CAPACITY_TYPE_ON_DEMAND]
    assert od and all(o.price == 0.096 and o.available for o in od)
    history = moto_server.client("ec2").describe_spot_price_history(InstanceTypes=["m5.large"])["SpotPriceHistory"]
    moto_spot = {h["AvailabilityZone"]: float(h["SpotPrice"]) for h in history}
    spot = [o for o in m5.offerings if o.capacity_type == L.CAPACITY_TYPE_SPOT]
    assert spot and all(o.price == moto_spot[o.zone] for o in spot)  # from DescribeSpotPriceHistory
    assert m5.allocatable["cpu"] == 1930 and m5.capacity["pods"] == 29
    assert by_name(types, "m6g.large").labels[L.ARCH] == "arm64"
    unpriced = [it for it in types if it.name.startswith("r9g.")]  # newer than every figure of the file
    unpriced_od = [o for it in unpriced for o in it.offerings if o.capacity_type == L.CAPACITY_TYPE_ON_DEMAND]
    assert unpriced_od and not any(o.available for o in unpriced_od)  # no on-demand price known: unavailable
    describes = len(env.transport.named("describe_instance_types"))
    env.provider.get_instance_types(None, make_template())
    assert len(env.transport.named("describe_instance_types")) == describes  # cached, not listed again


def test_subnets_security_groups_and_amis_by_tags_and_ids(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    resolver = env.provider.resolver
    by_tag = resolver.subnets(make_template())
    assert {s.id for s in by_tag} == set(env.account.subnets.values())
    one = env.account.subnets["us-east-1b"]
    assert [s.id for s in resolver.subnets(make_template("ids", subnetSelector={"aws-ids": one}))] == [one]
    assert resolver.security_groups(make_template()) == [env.account.security_group]
    ids = make_template("sg", securityGroupSelector={"aws-ids": env.account.security_group})
    assert resolver.security_groups(ids) == [env.account.security_group]
    amis = resolver.amis(make_template())
    assert {a.id for a in amis} == {env.account.amd64_ami, env.account.arm64_ami}
    assert [a.arch for a in resolver.amis(make_template("id", amiSelector={"aws-ids": env.account.arm64_ami}))] == [
        "arm64"
    ]
    with pytest.raises(ResolutionError, match="no subnets matched selector"):
        resolver.subnets(make_template("none", subnetSelector={"nothing": "here"}))
    with pytest.raises(ResolutionError, match="no security groups"):
        resolver.security_groups(make_template("none", securityGroupSelector={"nothing": "here"}))


def test_launch_creates_a_tagged_fleet_instance_and_reuses_its_launch_template(moto_server: MotoServer) -> None:
    env = make_provider(moto_server, node_label="kwok.x-k8s.io/node=fake")
    template = make_template(tags={"team": "infra"})
    types = env.provider.get_instance_types(None, template)
    request = make_request(types, ["m5.large", "m5.xlarge", "c5.large", "m6g.large"], template)
    inst = env.provider.create(request)
    (fleet,) = env.transport.named("create_fleet")
    assert fleet["Type"] == "instant" and fleet["TargetCapacitySpecification"]["TotalTargetCapacity"] == 1
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "spot"
    assert fleet["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    overrides = [o for c in fleet["LaunchTemplateConfigs"] for o in c["Overrides"]]
    assert {o["InstanceType"] for o in overrides} == {"m5.large", "m5.xlarge", "c5.large", "m6g.large"}
    assert {(o["AvailabilityZone"], o["SubnetId"]) for o in overrides} == set(
        (z, s) for z, s in env.account.subnets.items()
    )
    assert len(fleet["LaunchTemplateConfigs"]) == 2  # one launch template per AMI (amd64, arm64)
    assert inst.provider_id == f"aws:///{inst.zone}/{inst.provider_id.rsplit('/', 1)[-1]}"
    assert inst.name.startswith("ip-") and inst.capacity_type == L.CAPACITY_TYPE_SPOT
    assert inst.labels["kwok.x-k8s.io/node"] == "fake" and inst.labels[L.PROVISIONER_NAME] == "default"
    assert inst.allocatable["pods"] > 0
    ec2 = moto_server.client("ec2")
    raw = ec2.describe_instances()["Reservations"][0]["Instances"][0]
    tags = {t["Key"]: t["Value"] for t in raw["Tags"]}
    assert tags[L.PROVISIONER_NAME] == "default" and tags["karpenter.sh/discovery"] == CLUSTER
    assert tags[f"kubernetes.io/cluster/{CLUSTER}"] == "owned" and tags["team"] == "infra"
    assert tags["Name"] == "karpenter.sh/provisioner-name/default" and tags[OWNERSHIP_TAG] == CLUSTER
    lts = ec2.describe_launch_templates()["LaunchTemplates"]
    assert len(lts) == 2 and all({"Key": CLUSTER_TAG, "Value": CLUSTER} in lt["Tags"] for lt in lts)
    assert all({"Key": OWNERSHIP_TAG, "Value": CLUSTER} in lt["Tags"] for lt in lts)
    (fleet_obj,) = ec2.describe_fleets()["Fleets"]
    assert {"Key": OWNERSHIP_TAG, "Value": CLUSTER} in fleet_obj["Tags"]
    data = ec2.describe_launch_template_versions(LaunchTemplateName=lts[0]["LaunchTemplateName"])
    lt_data = data["LaunchTemplateVersions"][0]["LaunchTemplateData"]
    assert lt_data["MetadataOptions"]["HttpTokens"] == "required"
    assert lt_data["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
    script = base64.b64decode(lt_data["UserData"]).decode()
    assert f"/etc/eks/bootstrap.sh '{CLUSTER}'" in script and "karpenter.sh/provisioner-name=default" in script
    # a second launch of the same configuration reuses the templates
    env.provider.create(make_request(types, ["m5.large", "c5.large", "m6g.large", "m5.xlarge"], template))
    assert len(ec2.describe_launch_templates()["LaunchTemplates"]) == 2
    assert len(env.transport.named("create_launch_template")) == 2


def test_on_demand_when_spot_is_not_allowed(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    inst = env.provider.create(make_request(types, ["m5.large"], template, capacity_types=["on-demand"]))
    (fleet,) = env.transport.named("create_fleet")
    assert fleet["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    assert fleet["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert inst.capacity_type == L.CAPACITY_TYPE_ON_DEMAND and inst.price == 0.096


def test_get_list_terminate(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    a = env.provider.create(make_request(types, ["m5.large"], template))
    b = env.provider.create(make_request(types, ["c5.large"], template))
    ec2 = moto_server.client("ec2")
    ec2.run_instances(ImageId=env.account.amd64_ami, MinCount=1, MaxCount=1)  # not karpy's
    assert sorted(i.provider_id for i in env.provider.list()) == sorted([a.provider_id, b.provider_id])
    got = env.provider.get(a.provider_id)
    assert got.instance_type == "m5.large" and got.provisioner == "default"
    env.provider.delete(a.provider_id)
    assert [i.provider_id for i in env.provider.list()] == [b.provider_id]
    with pytest.raises(NodeNotFoundError):
        env.provider.get(a.provider_id)
    with pytest.raises(NodeNotFoundError):  # terminating a gone instance: callers treat it as done
        env.provider.delete(a.provider_id)
    with pytest.raises(NodeNotFoundError):
        env.provider.get("aws:///us-east-1a/i-0123456789abcdef0")


def test_has_seen_confirms_a_terminated_instance_of_the_cluster_only(moto_server: MotoServer) -> None:
    """Garbage collection's proof after a restart that a node's missing instance existed."""
    env = make_provider(moto_server)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    gone = env.provider.create(make_request(types, ["m5.large"], template))
    env.provider.delete(gone.provider_id)
    assert env.provider.has_seen(gone.provider_id)  # terminated, tags kept
    ec2 = moto_server.client("ec2")
    (foreign,) = ec2.run_instances(ImageId=env.account.amd64_ami, MinCount=1, MaxCount=1)["Instances"]
    ec2.terminate_instances(InstanceIds=[foreign["InstanceId"]])
    assert not env.provider.has_seen(f"aws:///us-east-1a/{foreign['InstanceId']}")  # not this cluster's
    assert not env.provider.has_seen("aws:///us-east-1a/i-0123456789abcdef0")  # unknown proves nothing
    karpenters = karpenter_instance(moto_server, env.account.amd64_ami)
    assert not env.provider.has_seen(f"aws:///us-east-1a/{karpenters}")  # Karpenter's: not karpy's
    describes = len(env.transport.named("describe_instances"))
    assert not env.provider.has_seen(f"aws:///us-east-1a/{karpenters}")
    assert len(env.transport.named("describe_instances")) == describes  # a foreign instance is remembered


def karpenter_instance(moto: MotoServer, ami: str, cluster: str = CLUSTER) -> str:
    """An instance as Karpenter v0.31 tags its own: every Karpenter tag, no karpy ownership tag."""
    tags = [
        {"Key": "Name", "Value": "karpenter.sh/provisioner-name/default"},
        {"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"},
        {"Key": L.PROVISIONER_NAME, "Value": "default"},
        {"Key": "karpenter.sh/managed-by", "Value": cluster},
        {"Key": "karpenter.sh/discovery", "Value": cluster},
    ]
    (inst,) = moto.client("ec2").run_instances(
        ImageId=ami, MinCount=1, MaxCount=1, InstanceType="m5.large",
        TagSpecifications=[{"ResourceType": "instance", "Tags": tags}],
    )["Instances"]  # fmt: skip
    return str(inst["InstanceId"])


def karpenter_launch_template(moto: MotoServer, ami: str, cluster: str = CLUSTER) -> str:
    """A launch template as Karpenter names and tags its own."""
    name = "karpenter.k8s.aws/4421785093862152727"
    moto.client("ec2").create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": ami},
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": [{"Key": CLUSTER_TAG, "Value": cluster}]}],
    )  # fmt: skip
    return name


def test_karpenters_instances_and_launch_templates_are_never_karpys(moto_server: MotoServer) -> None:
    """Beside Karpenter (a migration): list, get, garbage collection and launch-template cleanup
    see only what carries karpy's ownership tag; karpy's own leak and unused template still go."""
    env = make_provider(moto_server)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    karpenters = karpenter_instance(moto_server, env.account.amd64_ami)
    karpenter_lt = karpenter_launch_template(moto_server, env.account.amd64_ami)
    leak = env.provider.create(make_request(types, ["m5.large"], template))
    assert [i.provider_id for i in env.provider.list()] == [leak.provider_id]
    env.clock.step(time.time() - env.clock.now())  # moto's launch times are real times
    with pytest.raises(NodeNotFoundError):
        env.provider.get(f"aws:///us-east-1a/{karpenters}")
    # after a restart karpy re-discovers its own templates only
    fresh = make_provider(moto_server).provider
    assert fresh.launch_templates.hydrate() == 1
    assert all(n.startswith("karpy/") for n in fresh.launch_templates.known())
    kube = FakeKube(env.clock)
    state = sync_from(ClusterState(env.clock), kube)
    gc = GarbageCollectionController(state, kube, env.provider, env.clock, DecisionLog(env.clock), leak_seconds=30)
    for _ in range(5):  # several periods, each past the leak age
        env.clock.step(60)
        gc.reconcile()
        env.provider.launch_templates.cleanup()
        fresh.launch_templates.cleanup()
    ec2 = moto_server.client("ec2")
    states = {
        i["InstanceId"]: i["State"]["Name"]
        for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]
    }  # fmt: skip
    assert states[karpenters] == "running"
    assert states[instance_id_of(leak.provider_id)] == "terminated"
    names = [lt["LaunchTemplateName"] for lt in ec2.describe_launch_templates()["LaunchTemplates"]]
    assert names == [karpenter_lt]  # karpy's unused template deleted, Karpenter's kept
    assert not [p for p in env.transport.named("terminate_instances") if karpenters in p["InstanceIds"]]


def test_after_a_restart_gc_deletes_the_node_whose_instance_ec2_shows_terminated(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    dead = env.provider.create(make_request(types, ["m5.large"], template))
    live = env.provider.create(make_request(types, ["c5.large"], template))
    moto_server.client("ec2").terminate_instances(
        InstanceIds=[instance_id_of(dead.provider_id)]
    )  # while karpy was down
    kube, state = FakeKube(env.clock), ClusterState(env.clock)
    for inst in (dead, live):
        kube.put(NODES, make_node(inst.name, provider_id=inst.provider_id, finalizers=()))
    kube.put(NODES, make_node("elsewhere", provider_id="aws:///us-east-1a/i-0123456789abcdef0", finalizers=()))
    sync_from(state, kube)
    result = GarbageCollectionController(state, kube, env.provider, env.clock, DecisionLog(env.clock)).reconcile()
    assert result.orphan_nodes == (dead.name,) and result.unconfirmed_nodes == ("elsewhere",)
    assert sorted(n["metadata"]["name"] for n in kube.items(NODES)) == sorted([live.name, "elsewhere"])


def test_drift_of_ami_subnet_and_security_groups(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    template = make_template()
    types = env.provider.get_instance_types(None, template)
    m5 = by_name(types, "m5.large")
    inst = env.provider.create(make_request(types, ["m5.large"], template))
    assert inst.labels[L.INSTANCE_AMI_ID] == env.account.amd64_ami
    ec2 = moto_server.client("ec2")
    # moto's CreateFleet leaves the launch template's SecurityGroupIds out (the VPC's default group);
    # EC2 applies them: give the instance its groups as EC2 would
    ec2.modify_instance_attribute(InstanceId=instance_id_of(inst.provider_id), Groups=[env.account.security_group])
    assert env.provider.is_drifted(inst.provider_id, m5, template) is None
    images = ec2.describe_images(Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}])
    other_ami = next(i["ImageId"] for i in images["Images"] if i["ImageId"] != env.account.amd64_ami)
    ami = env.provider.is_drifted(inst.provider_id, m5, make_template("new-ami", amiSelector={"aws-ids": other_ami}))
    assert ami is not None and ami.reason is DriftReason.AMI and env.account.amd64_ami in ami.message
    other_sg = ec2.create_security_group(GroupName="extra", Description="x", VpcId=env.account.vpc)["GroupId"]
    groups = make_template("sgs", securityGroupSelector={"aws-ids": f"{env.account.security_group},{other_sg}"})
    sg = env.provider.is_drifted(inst.provider_id, m5, groups)
    assert sg is not None and sg.reason is DriftReason.SECURITY_GROUP
    zone = next(z for z in env.account.subnets if z != inst.zone)
    subnet = env.provider.is_drifted(
        inst.provider_id, m5, make_template("subnet", subnetSelector={"aws-ids": env.account.subnets[zone]})
    )
    assert subnet is not None and subnet.reason is DriftReason.SUBNET
    env.provider.delete(inst.provider_id)
    with pytest.raises(NodeNotFoundError):
        env.provider.is_drifted(inst.provider_id, m5, template)


def test_template_status_names_what_it_resolves_to_and_what_is_missing(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    status = env.provider.template_status(make_template())
    assert sorted(s["id"] for s in status["subnets"]) == sorted(env.account.subnets.values())
    assert {s["zone"] for s in status["subnets"]} == {"us-east-1a", "us-east-1b"}
    assert status["securityGroups"] == [{"id": env.account.security_group}]
    assert {a["id"] for a in status["amis"]} == {env.account.amd64_ami, env.account.arm64_ami}
    assert status["problems"] == [
        "no instance profile: set spec.instanceProfile or aws.defaultInstanceProfile "
        "(a node without one never joins the cluster)"
    ]
    with_profile = env.provider.template_status(make_template(instanceProfile="nodes"))
    assert with_profile["problems"] == []
    nothing = env.provider.template_status(make_template(subnetSelector={"no": "match"}, instanceProfile="nodes"))
    assert nothing["subnets"] == [] and "no subnets matched" in nothing["problems"][0]


def test_pod_eni_capacity_when_enabled(moto_server: MotoServer) -> None:
    """aws.enablePodENI: trunking-compatible types offer their branch interfaces (security groups for pods)."""
    env = make_provider(moto_server)
    plain = by_name(env.provider.get_instance_types(None, make_template()), "m5.large")
    assert "vpc.amazonaws.com/pod-eni" not in plain.capacity
    env.provider.reconfigure(dataclasses.replace(env.provider.settings, enable_pod_eni=True))
    types = env.provider.get_instance_types(None, make_template())
    m5 = by_name(types, "m5.large")
    assert m5.capacity["vpc.amazonaws.com/pod-eni"] == 9 and m5.allocatable["vpc.amazonaws.com/pod-eni"] == 9
    assert by_name(types, "c5.xlarge").capacity["vpc.amazonaws.com/pod-eni"] == 18
    untrunked = [it for it in types if it.name not in branch_interfaces()]  # not trunking-compatible
    assert untrunked and all("vpc.amazonaws.com/pod-eni" not in it.capacity for it in untrunked)
    # a pod of security groups for pods (the VPC resource controller adds the request) is scheduled
    pod = dataclasses.replace(make_pod("sg-pod", cpu="1"), requests={"cpu": 1000, "vpc.amazonaws.com/pod-eni": 1})
    result = run([pod], types=[m5, *untrunked[:20]])
    launch = result.new_nodes[0].launch
    assert not result.unschedulable and launch is not None and launch.instance_type.name == "m5.large"
    without = run([pod], types=untrunked[:20])
    assert "pod-eni" in next(iter(without.unschedulable.values()))


def test_an_isolated_vpc_outside_us_east_1_prices_and_launches_from_the_price_file(moto_server: MotoServer) -> None:
    """aws.isolatedVPC: no pricing API call; the committed file's figures for the region price the offerings."""
    region = "eu-central-1"
    env = make_provider(moto_server, region=region, isolated_vpc=True)
    file = read_price_file()["onDemand"][region]
    types = env.provider.get_instance_types(None, make_template())
    m5 = by_name(types, "m5.large")
    od = [o for o in m5.offerings if o.capacity_type == L.CAPACITY_TYPE_ON_DEMAND]
    assert {o.zone for o in od} == {f"{region}a", f"{region}b"}
    assert od and all(o.available and o.price == file["m5.large"] for o in od)
    priced = [it for it in types if any(o.available for o in it.offerings if o.capacity_type == "on-demand")]
    assert len(priced) > 300 and all(file[it.name] for it in priced)
    assert env.transport.named("get_products") == []  # the Price List API is never asked
    env.provider.create(make_request(types, ["m5.large", "m5.xlarge"], make_template(), [L.CAPACITY_TYPE_ON_DEMAND]))
    (instance,) = [
        i for r in moto_server.client("ec2", region).describe_instances()["Reservations"] for i in r["Instances"]
    ]
    assert instance["InstanceType"] == "m5.large" and instance["Placement"]["AvailabilityZone"].startswith(region)
