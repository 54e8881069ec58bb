"""`karpy simulate` and `karpy catalog` (design.md, "Command line").

`register(subparsers)` adds both subcommands to the `karpy` program (`karpy/cli.py`); the
decision code they drive lives in `controller.simulate` (inputs, output). Bad input prints a message naming
the file, document and field to stderr and exits with code 2 — never a traceback.

    karpy simulate --provisioners FILE --pods FILE [--nodes FILE] [--catalog FILE] --output json|table
    karpy simulate --from-cluster [--kubeconfig FILE | --dump FILE] [--catalog FILE] --output json|table
      (what karpy would do on a live cluster now: `fromcluster.py`)
    karpy catalog [--provider simulated|aws [--region R] [--endpoint-url URL] [--price-file F] [--isolated-vpc]]
        --output json|table
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from controller.cloudprovider.simulated.catalog import catalog_to_json, simulated_catalog
from controller.core.resources import format_resources
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import InstanceType, SchedulingInput
from controller.simulate.inputs import InputError, read_catalog, read_inputs, types_by_provisioner
from controller.simulate.output import to_json, to_table
from karpy import fromcluster

EXIT_INPUT = 2


def simulate(args: argparse.Namespace) -> int:
    if args.from_cluster:
        return fromcluster.simulate_from_cluster(args)
    if args.dump or args.kubeconfig:
        print("karpy simulate: --dump and --kubeconfig go with --from-cluster", file=sys.stderr)
        return EXIT_INPUT
    if not (args.provisioners and args.pods):
        print("karpy simulate: --provisioners and --pods are required (or --from-cluster)", file=sys.stderr)
        return EXIT_INPUT
    try:
        paths = [args.provisioners, args.pods] + ([args.nodes] if args.nodes else [])
        inputs = read_inputs(paths)
        catalog = read_catalog(args.catalog) if args.catalog else simulated_catalog()
    except InputError as err:
        print(f"karpy simulate: {err}", file=sys.stderr)
        return EXIT_INPUT
    if not inputs.provisioners:
        print(f"karpy simulate: no Provisioner in {args.provisioners} (or the other inputs)", file=sys.stderr)
        return EXIT_INPUT
    types = types_by_provisioner(inputs, catalog)
    for warning in inputs.warnings:
        print(f"karpy simulate: warning: {warning}", file=sys.stderr)
    result = schedule(
        SchedulingInput(
            pods=inputs.pods,
            provisioners=inputs.provisioners,
            instance_types=types,
            nodes=inputs.nodes,
            daemonsets=inputs.daemonsets,
            volumes=inputs.volumes,
        )
    )
    if args.output == "json":
        json.dump(to_json(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(to_table(result))
    return 0


def _aws_catalog(args: argparse.Namespace) -> tuple[InstanceType, ...] | int:
    """The AWS catalog of a region (every zone; default kubelet settings and AL2 node shape)."""
    from controller.clock import SystemClock
    from controller.cloudprovider.aws.api import AWSApi, Boto3Transport
    from controller.cloudprovider.aws.pricing import PriceFileError, Prices, read_price_file
    from controller.cloudprovider.aws.provider import AWSCloudProvider, AWSSettings
    from controller.cloudprovider.errors import CloudProviderError

    if not args.region:
        print("karpy catalog: --region is required with --provider aws", file=sys.stderr)
        return EXIT_INPUT
    try:
        prices = Prices(args.region, read_price_file(args.price_file))
    except PriceFileError as err:
        print(f"karpy catalog: {err}", file=sys.stderr)
        return EXIT_INPUT
    api = AWSApi(Boto3Transport(args.region, args.endpoint_url))
    settings = AWSSettings(region=args.region, cluster_name="karpy", isolated_vpc=args.isolated_vpc)
    provider = AWSCloudProvider(api, settings, SystemClock(), prices)
    try:
        types = provider.get_instance_types()
    except CloudProviderError as err:
        print(f"karpy catalog: {err}", file=sys.stderr)
        return 1
    print(f"karpy catalog: {prices.describe()}", file=sys.stderr)
    return types


def catalog(args: argparse.Namespace) -> int:
    if args.provider == "aws":
        found = _aws_catalog(args)
        if isinstance(found, int):
            return found
        types = found
    else:
        types = simulated_catalog()
    if args.output == "json":
        json.dump(catalog_to_json(types), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    for it in types:
        alloc: dict[str, Any] = format_resources(it.allocatable)
        cheapest = min((o.price for o in it.offerings if o.available), default=float("nan"))
        summary = f"cpu={alloc.get('cpu')} memory={alloc.get('memory')} pods={alloc.get('pods')}"
        sys.stdout.write(f"{it.name:<20} {summary:<48} from ${cheapest:.4f}/h\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sim = subparsers.add_parser("simulate", help="one provisioning decision without a cluster")
    sim.add_argument("--provisioners", help="YAML with Provisioners (and AWSNodeTemplates)")
    sim.add_argument("--pods", help="YAML with Pods, Deployments, Jobs, DaemonSets, …")
    sim.add_argument(
        "--from-cluster", action="store_true",
        help="plan on a live cluster (--kubeconfig, else $KUBECONFIG or in-cluster) or a saved dump (--dump): "
        "launches for pending pods, consolidation, $/h before and after; reads only (get/list)",
    )  # fmt: skip
    sim.add_argument("--kubeconfig", help="with --from-cluster: the cluster to read")
    sim.add_argument(
        "--dump",
        help="with --from-cluster: a saved `kubectl get nodes,pods,daemonsets,pdb,provisioners,awsnodetemplates,"
        "pvc,pv,storageclasses,csinodes -A -o json`",
    )
    sim.add_argument("--nodes", help="YAML with existing Nodes")
    sim.add_argument("--catalog", help="instance types in the `karpy catalog --output json` format")
    sim.add_argument("--output", choices=("json", "table"), default="table")
    sim.set_defaults(func=simulate)
    cat = subparsers.add_parser("catalog", help="the instance types the scheduler sees")
    cat.add_argument("--provider", choices=("simulated", "aws"), default="simulated")
    cat.add_argument("--region", help="AWS region (with --provider aws)")
    cat.add_argument("--endpoint-url", help="AWS endpoint URL override (e.g. a moto server)")
    cat.add_argument("--price-file", help="on-demand price file (default: built in, then the pricing API)")
    cat.add_argument(
        "--isolated-vpc",
        action="store_true",
        help="never ask the pricing API: on-demand prices from the price file only",
    )
    cat.add_argument("--output", choices=("json", "table"), default="json")
    cat.set_defaults(func=catalog)
