"""`karpy simulate --from-cluster`: read a live cluster (or a saved dump), print what karpy would do.

The reading is here (the product layer: a kubeconfig, only get/list calls, or a file from
`kubectl get nodes,pods,daemonsets,pdb,provisioners,awsnodetemplates,pvc,pv,storageclasses,csinodes
-A -o json` — the volume kinds tell where pods with claims may run); the plan is
`controller/explain/cluster.py`, the controller's own decisions on plain objects. A kind the
cluster does not serve (no Provisioner CRD: a cluster karpy does not manage) reads as empty.
Exit codes: 0 planned, 1 the cluster could not be read, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from controller.cloudprovider.simulated.catalog import simulated_catalog
from controller.explain.cluster import plan_cluster
from controller.kube.client import Kube
from controller.kube.errors import KubeError, NotFoundError, TooManyRequestsError
from controller.kube.resources import WATCHED, Kind
from controller.scheduling.scheduler import schedule
from controller.scheduling.types import InstanceType
from controller.simulate.inputs import InputError, parse_documents, read_catalog

EXIT_UNREADABLE = 1
BUSY_RETRIES = 20  # a 429 (e.g. a CRD's storage still initializing) is retried, 0.5 s apart
EXIT_INPUT = 2
KIND_NAMES = {
    "Pod": "pods", "Node": "nodes", "Provisioner": "provisioners", "AWSNodeTemplate": "awsnodetemplates",
    "DaemonSet": "daemonsets", "PodDisruptionBudget": "poddisruptionbudgets",
    "PersistentVolumeClaim": "persistentvolumeclaims", "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses", "CSINode": "csinodes",
}  # fmt: skip


class ReadError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def read_dump(path: str) -> dict[str, list[dict[str, Any]]]:
    """The objects of a saved `kubectl get … -o json` (a List, or YAML/JSON documents), by kind."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except OSError as err:
        raise ReadError(f"cannot read {path}: {err.strerror or err}", EXIT_INPUT) from None
    except UnicodeDecodeError:
        raise ReadError(f"{path}: not UTF-8 text", EXIT_INPUT) from None
    try:
        docs = parse_documents(text, path)
    except InputError as err:
        raise ReadError(str(err), EXIT_INPUT) from None
    out: dict[str, list[dict[str, Any]]] = {name: [] for name in KIND_NAMES.values()}
    for _, doc in docs:
        name = KIND_NAMES.get(str(doc.get("kind")))
        if name is not None:
            out[name].append(dict(doc))
    return out


def read_cluster(kubeconfig: str | None) -> dict[str, list[dict[str, Any]]]:
    """Every kind the plan reads, listed once (get/list only)."""
    from controller.kube.client import KubeClient

    try:
        kube = KubeClient(kubeconfig)
    except Exception as err:  # a missing or malformed kubeconfig
        raise ReadError(f"cannot use the kubeconfig: {err}", EXIT_INPUT) from None
    out: dict[str, list[dict[str, Any]]] = {}
    for kind in WATCHED:
        try:
            out[kind.name] = _list(kube, kind)
        except NotFoundError:  # the cluster does not serve this kind (e.g. no Provisioner CRD)
            out[kind.name] = []
        except KubeError as err:
            raise ReadError(f"listing {kind.name}: {err}", EXIT_UNREADABLE) from None
        except OSError as err:
            raise ReadError(f"cannot reach the cluster: {err}", EXIT_UNREADABLE) from None
    return out


def _list(kube: Kube, kind: Kind) -> list[dict[str, Any]]:
    for _ in range(BUSY_RETRIES):
        try:
            return kube.list(kind).items
        except TooManyRequestsError:
            time.sleep(0.5)
    return kube.list(kind).items


def plan_text(plan: Mapping[str, Any]) -> str:
    def price(v: Any) -> str:
        return f"${v:.4f}/h" if isinstance(v, (int, float)) else "price unknown"

    lines = [f"now: {plan['before']['nodes']} node(s), {price(plan['before']['pricePerHour'])}"]
    for launch in plan["launches"]:
        lines.append(f"launch {launch['instanceType']} ({launch['capacityType']}, {launch['zone']}, "
                     f"{price(launch['pricePerHour'])}) for {len(launch['pods'])} pending pod(s)")  # fmt: skip
    for u in plan["unschedulable"]:
        lines.append(f"cannot place {u['pod']}: {u['reason']}")
    for i, step in enumerate(plan["consolidation"], 1):
        removed = ", ".join(f"{r['node']} ({r['instanceType']})" for r in step["remove"])
        added = ", ".join(f"{a['instanceType']} {price(a['pricePerHour'])}" for a in step["launch"])
        lines.append(f"{i}. {step['method']}: {step['action']} {removed}" + (f" with {added}" if added else "")
                     + f": {price(step['priceBefore'])} -> {price(step['priceAfter'])}")  # fmt: skip
    lines.append(f"after: {plan['after']['nodes']} node(s), {price(plan['after']['pricePerHour'])} "
                 f"(saving {price(plan['savingPerHour'])})")  # fmt: skip
    lines.append("")
    lines.append(f"{'NODE':<40} {'ORIGIN':<9} {'PLAN':<22} {'TYPE':<16} {'$/H':>8} PODS")
    for n in plan["nodes"]:
        cost = f"{n['pricePerHour']:.4f}" if isinstance(n["pricePerHour"], (int, float)) else "?"
        lines.append(f"{n['node']:<40} {n['origin']:<9} {n['plan']:<22} {n['instanceType']:<16} {cost:>8} "
                     f"{len(n['pods'])}")  # fmt: skip
    lines += [f"warning: {w}" for w in plan["warnings"]]
    return "\n".join(lines) + "\n"


def simulate_from_cluster(args: argparse.Namespace) -> int:
    try:
        objects = read_dump(args.dump) if args.dump else read_cluster(args.kubeconfig)
        catalog: Sequence[InstanceType] = read_catalog(args.catalog) if args.catalog else simulated_catalog()
    except ReadError as err:
        print(f"karpy simulate: {err}", file=sys.stderr)
        return err.code
    except InputError as err:
        print(f"karpy simulate: {err}", file=sys.stderr)
        return EXIT_INPUT
    plan = plan_cluster(objects, catalog, time.time(), schedule)
    if args.output == "json":
        json.dump(plan, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(plan_text(plan))
    return 0
