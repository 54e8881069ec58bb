"""`karpy simulate` and `karpy catalog` (design.md, "Command line").

`register(subparsers)` adds both subcommands to the `karpy` program (`karpy/cli.py`); the
decision code they drive lives in `controller.simulate` (inputs, output). Bad input prints a message naming
the file, document and field to stderr and exits with code 2 — never a traceback.

    karpy simulate --provisioners FILE --pods FILE [--nodes FILE] [--catalog FILE] --output json|table
    karpy catalog [--provider simulated|aws] --output json|table
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from controller.cloudprovider.simulated.catalog import catalog_to_json, simulated_catalog
from controller.core.resources import format_resources
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import SchedulingInput
from controller.simulate.inputs import InputError, read_catalog, read_inputs, types_by_provisioner
from controller.simulate.output import to_json, to_table

EXIT_INPUT = 2


def simulate(args: argparse.Namespace) -> int:
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
        )
    )
    if args.output == "json":
        json.dump(to_json(result), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(to_table(result))
    return 0


def catalog(args: argparse.Namespace) -> int:
    if args.provider != "simulated":
        print(
            "karpy catalog: only --provider simulated can be listed without a cloud account; "
            "export an AWS catalog with the aws cloud provider and pass it to simulate with --catalog",
            file=sys.stderr,
        )
        return EXIT_INPUT
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
    sim.add_argument("--provisioners", required=True, help="YAML with Provisioners (and AWSNodeTemplates)")
    sim.add_argument("--pods", required=True, help="YAML with Pods, Deployments, Jobs, DaemonSets, …")
    sim.add_argument("--nodes", help="YAML with existing Nodes")
    sim.add_argument("--catalog", help="instance types in the `karpy catalog --output json` format")
    sim.add_argument("--output", choices=("json", "table"), default="table")
    sim.set_defaults(func=simulate)
    cat = subparsers.add_parser("catalog", help="the instance types the scheduler sees")
    cat.add_argument("--provider", choices=("simulated", "aws"), default="simulated")
    cat.add_argument("--output", choices=("json", "table"), default="json")
    cat.set_defaults(func=catalog)
