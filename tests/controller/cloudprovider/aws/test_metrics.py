"""The AWS provider's Karpenter gauges: each discovered type's vCPUs and memory, every price it
decides with (on-demand without a zone, spot per zone), after discovery against moto_server."""

from __future__ import annotations

from prometheus_client import REGISTRY

from controller.exposition import exposition
from tests.controller.cloudprovider.aws.builders import make_provider, make_template
from tests.support.moto import REGION, MotoServer


def sample(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(f"karpenter_cloudprovider_instance_type_{name}", labels)


def test_discovery_sets_the_instance_type_and_price_gauges(moto_server: MotoServer) -> None:
    env = make_provider(moto_server)
    env.provider.get_instance_types(None, make_template())
    assert sample("cpu_cores", instance_type="m5.large") == 2
    assert sample("memory_bytes", instance_type="m5.large") == 8 * 2**30
    assert sample("cpu_cores", instance_type="m6g.4xlarge") == 16
    on_demand = {"instance_type": "m5.large", "capacity_type": "on-demand", "region": REGION, "zone": ""}
    assert sample("price_estimate", **on_demand) == 0.096
    history = moto_server.client("ec2").describe_spot_price_history(InstanceTypes=["m5.large"])["SpotPriceHistory"]
    for entry in history:
        spot = {"instance_type": "m5.large", "capacity_type": "spot", "region": REGION,
                "zone": entry["AvailabilityZone"]}  # fmt: skip
        assert sample("price_estimate", **spot) == float(entry["SpotPrice"])
    text = exposition().decode()
    assert "# TYPE karpenter_cloudprovider_instance_type_price_estimate gauge\n" in text
    assert 'karpenter_cloudprovider_instance_type_cpu_cores{instance_type="m5.large"} 2.0\n' in text
