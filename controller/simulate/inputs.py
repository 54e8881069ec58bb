"""Read `karpy simulate` input files into a `SchedulingInput`.

Reads multi-document YAML: Provisioner and AWSNodeTemplate (defaulted and validated with the
webhook's own code, `controller.apis.load`), Pod, Deployment / ReplicaSet / StatefulSet / Job
(expanded into their pods), DaemonSet (overhead), PodDisruptionBudget (accepted, not used by a
single provisioning decision), Node (existing capacity), and PersistentVolumeClaim,
PersistentVolume, StorageClass and CSINode (what the pods' volumes allow; the claims of
StatefulSets' `volumeClaimTemplates` and of generic ephemeral volumes are made as their
controllers would, unless the inputs carry them). Pods with `spec.nodeName` are bound
to that node; the others are pending. Any problem raises `InputError`, whose message names the
file, the document and the field: also a file that is not UTF-8, a document nested deeper than
`limits.MAX_DEPTH`, and more than `MAX_PODS` pods in all (counted before a workload is expanded).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.apis.awsnodetemplate import NodeTemplateNotFoundError, resolve_node_template
from controller.apis.errors import InvalidObjectError
from controller.apis.limits import MAX_DEPTH, too_deep
from controller.apis.load import load_awsnodetemplate, load_provisioner
from controller.cloudprovider.aws.shaping import for_provisioner
from controller.cloudprovider.simulated.catalog import CatalogError, catalog_from_json
from controller.core.quantity import QuantityError
from controller.core.resources import parse_resources
from controller.scheduling.pods import PodSpecError, pod_request
from controller.scheduling.provisioners import provisioner_spec
from controller.scheduling.types import InstanceType, PodRequest, ProvisionerSpec, StateNode, VolumeObjects
from controller.scheduling.volumeobjects import read_claim, read_class, read_csinode, read_volume
from controller.scheduling.workloads import REPLICATED, claims, daemonset_pod, expand, replica_count
from controller.state.views import node_view

IGNORED_KINDS = ("PodDisruptionBudget",)
VOLUME_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "CSINode")
MAX_PODS = 100_000  # one decision over more pods than this is not a simulation anyone waits for


class InputError(ValueError):
    """An input file karpy cannot use; the message says where and why."""


@dataclass
class SimulationInputs:
    provisioners: list[ProvisionerSpec] = field(default_factory=list)
    pods: list[PodRequest] = field(default_factory=list)
    daemonsets: list[PodRequest] = field(default_factory=list)
    nodes: list[StateNode] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # provisioner name → (providerRef name, inline provider); AWSNodeTemplates by name
    provider_refs: dict[str, tuple[str | None, dict[str, Any] | None]] = field(default_factory=dict)
    node_templates: dict[str, dict[str, Any]] = field(default_factory=dict)
    volumes: VolumeObjects | None = None


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text (byte {err.start})") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from err


def documents(path: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(where, document) for every non-empty YAML document of a file."""
    return parse_documents(_read_text(path), path)


def parse_documents(text: str, path: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(where, document) for every non-empty YAML (or JSON) document of `text`, read from `path`
    (a file name, or what the text is, for messages)."""
    docs: list[Any] | None = None
    try:
        if text.lstrip().startswith("{"):
            try:  # JSON (a YAML subset) parses far faster with json: exported pod lists can be large
                docs = [json.loads(text)]
            except json.JSONDecodeError:
                docs = None
        if docs is None:
            try:
                docs = list(yaml.safe_load_all(text))
            except yaml.YAMLError as err:
                raise InputError(f"{path}: not valid YAML: {err}") from err
    except RecursionError:
        raise InputError(f"{path}: not usable: nested too deep") from None
    out: list[tuple[str, Mapping[str, Any]]] = []
    for i, doc in enumerate(docs, 1):
        if doc is None:
            continue
        if not isinstance(doc, Mapping):
            raise InputError(f"{path}: document {i}: expected a mapping, got {type(doc).__name__}")
        deep = too_deep(doc)
        if deep is not None:
            raise InputError(f"{path}: document {i}: {deep}: nested deeper than {MAX_DEPTH} levels")
        kind = doc.get("kind")
        meta = doc.get("metadata")
        if meta is not None and not isinstance(meta, Mapping):
            raise InputError(f"{path}: document {i} ({kind}): metadata: expected a mapping")
        name = (meta or {}).get("name")
        where = f"{path}: document {i}" + (f" ({kind} {name})" if kind else "")
        if not kind:
            raise InputError(f"{where}: kind: required")
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend((f"{where} item {j}", item) for j, item in enumerate(doc["items"]) if isinstance(item, Mapping))
            continue
        out.append((where, doc))
    return out


def read_inputs(paths: Iterable[str]) -> SimulationInputs:
    """Every document of every file, sorted into provisioners, pods, daemonsets and nodes."""
    inputs = SimulationInputs()
    raw_pods: list[tuple[str, Mapping[str, Any]]] = []
    raw_nodes: list[tuple[str, Mapping[str, Any]]] = []
    volume_docs: dict[str, list[Mapping[str, Any]]] = {kind: [] for kind in VOLUME_KINDS}
    implied: list[Mapping[str, Any]] = []
    for path in paths:
        for where, doc in documents(path):
            kind = doc.get("kind")
            try:
                if kind == "Provisioner":
                    prov = load_provisioner(dict(doc))
                    inputs.provisioners.append(provisioner_spec(prov))
                    inputs.provider_refs[prov.name] = (prov.provider_ref_name, prov.provider)
                elif kind == "AWSNodeTemplate":
                    template = load_awsnodetemplate(dict(doc))
                    inputs.node_templates[template.name] = template.to_wire()
                elif kind == "Pod":
                    if len(raw_pods) >= MAX_PODS:
                        raise PodSpecError(f"karpy simulate takes at most {MAX_PODS} pods in all")
                    raw_pods.append((where, doc))
                    implied.extend(claims(doc))
                elif kind in (*REPLICATED, "Job"):
                    count = replica_count(doc)
                    if len(raw_pods) + count > MAX_PODS:
                        raise PodSpecError(f"{count} replicas: karpy simulate takes at most {MAX_PODS} pods in all")
                    expanded = expand(doc)
                    raw_pods.extend((f"{where} pod {i}", pod) for i, pod in enumerate(expanded))
                    implied.extend(c for pod in expanded for c in claims(pod, doc))
                elif kind == "DaemonSet":
                    inputs.daemonsets.append(pod_request(daemonset_pod(doc)))
                elif kind == "Node":
                    raw_nodes.append((where, doc))
                elif kind in VOLUME_KINDS:
                    volume_docs[str(kind)].append(doc)
                elif kind in IGNORED_KINDS:
                    continue
                else:
                    inputs.warnings.append(f"{where}: kind {kind!r} is not used by karpy simulate, skipped")
            except InvalidObjectError as err:
                raise InputError(f"{where}: invalid {kind}:\n{err}") from err
            except (PodSpecError, QuantityError, ValueError) as err:
                raise InputError(f"{where}: {err}") from err
    names = [p.name for p in inputs.provisioners]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"provisioner {duplicates[0]!r} is defined more than once")
    pods = []
    for where, doc in raw_pods:
        try:
            pods.append(pod_request(doc))
        except (PodSpecError, QuantityError, ValueError) as err:
            raise InputError(f"{where}: {err}") from err
    if implied or any(volume_docs.values()):
        inputs.volumes = _volumes(volume_docs, implied)
    inputs.nodes = [_node(where, doc, pods) for where, doc in raw_nodes]
    node_names = {n.name for n in inputs.nodes}
    deleting = {n.name for n in inputs.nodes if n.marked_for_deletion}
    inputs.pods = [p for p in pods if not p.node_name or p.node_name in deleting]
    for pod in pods:
        if pod.node_name and pod.node_name not in node_names:
            inputs.warnings.append(f"pod {pod.key} is bound to node {pod.node_name!r}, which is not in the inputs")
    return inputs


def _volumes(docs: Mapping[str, list[Mapping[str, Any]]], implied: Iterable[Mapping[str, Any]]) -> VolumeObjects:
    """The inputs' claims (over those their workloads would create), volumes, classes and CSINodes;
    one that cannot be read keeps the pods using it pending with the reason, as in the cluster."""
    found = {c.key: c for c in map(read_claim, implied)}
    found.update((c.key, c) for c in map(read_claim, docs["PersistentVolumeClaim"]))
    return VolumeObjects(
        claims=found,
        volumes={v.name: v for v in map(read_volume, docs["PersistentVolume"])},
        classes={c.name: c for c in map(read_class, docs["StorageClass"])},
        node_limits=dict(map(read_csinode, docs["CSINode"])),
    )


def _node(where: str, doc: Mapping[str, Any], pods: Sequence[PodRequest]) -> StateNode:
    """One Node document as the scheduler sees it, through cluster state's own converter
    (`state.views.node_view` → `NodeView.state_node`, one "initialized" rule); input errors
    name the field, and a Node without `status.allocatable` offers its capacity."""
    meta = doc.get("metadata") or {}
    status = doc.get("status") or {}
    if not str(meta.get("name") or ""):
        raise InputError(f"{where}: metadata.name: required")
    try:
        parse_resources(status.get("capacity"))
        parse_resources(status.get("allocatable"))
    except QuantityError as err:
        raise InputError(f"{where}: status: {err}") from err
    if not isinstance((doc.get("spec") or {}).get("taints") or [], list):
        raise InputError(f"{where}: spec.taints: expected a list")
    view = node_view(dict(doc))
    view = dataclasses.replace(
        view, allocatable=view.allocatable or dict(view.capacity), marked_for_deletion=view.deleting
    )
    state = view.state_node()
    return dataclasses.replace(state, pods=tuple(p for p in pods if p.node_name == state.name))


def read_catalog(path: str) -> tuple[InstanceType, ...]:
    """A catalog in the `karpy catalog --output json` format (JSON or YAML)."""
    text = _read_text(path)
    try:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            try:
                obj = yaml.safe_load(text)
            except yaml.YAMLError as err:
                raise InputError(f"{path}: neither JSON nor YAML: {err}") from err
    except RecursionError:
        raise InputError(f"{path}: not usable: nested too deep") from None
    if too_deep(obj) is not None:
        raise InputError(f"{path}: nested deeper than {MAX_DEPTH} levels")
    try:
        return catalog_from_json(obj)
    except CatalogError as err:
        raise InputError(f"{path}: {err}") from err


def types_by_provisioner(
    inputs: SimulationInputs, catalog: Sequence[InstanceType]
) -> dict[str, tuple[InstanceType, ...]]:
    """Each provisioner's view of the catalog through its kubelet settings and the
    AWSNodeTemplate it references (as the simulated cloud provider computes it); a referenced
    template missing from the inputs is a warning (the simulated cloud needs none)."""
    out = {}
    for spec in inputs.provisioners:
        ref, inline = inputs.provider_refs.get(spec.name, (None, None))
        try:
            template = resolve_node_template(spec.name, ref, inline, inputs.node_templates)
        except NodeTemplateNotFoundError as err:  # the simulated cloud needs none: AL2 defaults
            inputs.warnings.append(f"{err} in the inputs; its nodes use the AL2 defaults")
            template = None
        out[spec.name] = for_provisioner(catalog, spec.kubelet, template)
    return out
