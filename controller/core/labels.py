"""Every label, annotation, taint and finalizer key karpy reads or writes, and the label-domain
rules of the Provisioner API (spec §4.1–4.3).

Pure constants and predicates in the bottom layer (`controller.core`): shared by
defaulting/validation, the requirements algebra, the scheduler and the controllers. Karpenter's
well-known keys come first, then karpy's own `karpy.sh/` keys (the only place they are spelled).
karpy decision: a restricted domain matches by proper domain (the key's domain equals it or
ends with `.` + it), not by bare string suffix.
"""

from __future__ import annotations

import re

GROUP = "karpenter.sh"
AWS_GROUP = "karpenter.k8s.aws"

PROVISIONER_NAME = "karpenter.sh/provisioner-name"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INITIALIZED = "karpenter.sh/initialized"
DO_NOT_EVICT = "karpenter.sh/do-not-evict"
DO_NOT_CONSOLIDATE = "karpenter.sh/do-not-consolidate"
EMPTINESS_TIMESTAMP = "karpenter.sh/emptiness-timestamp"
VOLUNTARY_DISRUPTION = "karpenter.sh/voluntary-disruption"
VOLUNTARY_DISRUPTION_DRIFTED = "drifted"
# hashes of the static fields a node was launched with (drift, v0.31's keys)
PROVISIONER_HASH = "karpenter.sh/provisioner-hash"
NODE_TEMPLATE_HASH = "karpenter.k8s.aws/nodetemplate-hash"
TERMINATION_FINALIZER = "karpenter.sh/termination"

# karpy's own keys (not Karpenter's): see README "Behaviour worth knowing".
# A new node is created cordoned with this annotation while provisioning binds its pods.
BINDING_HOLD = "karpy.sh/binding-hold"
# A node cordoned by a deprovisioning replace command; the next leader lifts a stale one.
DEPROVISIONING_CORDON = "karpy.sh/deprovisioning-cordon"
# The version of the canonical form each drift hash was computed with (`apis/drifthash.py`): a
# node stamped by another version is not drifted by its hash, only re-stamped.
PROVISIONER_HASH_VERSION = "karpy.sh/provisioner-hash-version"
NODE_TEMPLATE_HASH_VERSION = "karpy.sh/nodetemplate-hash-version"
# The scheduling gate karpy's pod webhook puts on pods with a DoNotSchedule spread on a key other
# than the hostname; provisioning removes it once it has chosen the pod's domain (issue 17).
TOPOLOGY_GATE = "karpy.sh/topology-spread"

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
HOSTNAME = "kubernetes.io/hostname"

# Kubernetes keys karpy reads.
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"  # the taint a cordon means
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"  # orders consolidation candidates
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"  # a static (mirror) pod
EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"  # set on a terminating node

CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"

AWS_INSTANCE_PREFIX = "karpenter.k8s.aws/instance"
INSTANCE_HYPERVISOR = "karpenter.k8s.aws/instance-hypervisor"
INSTANCE_ENCRYPTION_IN_TRANSIT = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
INSTANCE_CATEGORY = "karpenter.k8s.aws/instance-category"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
INSTANCE_GENERATION = "karpenter.k8s.aws/instance-generation"
INSTANCE_SIZE = "karpenter.k8s.aws/instance-size"
INSTANCE_LOCAL_NVME = "karpenter.k8s.aws/instance-local-nvme"
INSTANCE_CPU = "karpenter.k8s.aws/instance-cpu"
INSTANCE_MEMORY = "karpenter.k8s.aws/instance-memory"
INSTANCE_NETWORK_BANDWIDTH = "karpenter.k8s.aws/instance-network-bandwidth"
INSTANCE_PODS = "karpenter.k8s.aws/instance-pods"
INSTANCE_GPU_NAME = "karpenter.k8s.aws/instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = "karpenter.k8s.aws/instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
INSTANCE_GPU_MEMORY = "karpenter.k8s.aws/instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = "karpenter.k8s.aws/instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = "karpenter.k8s.aws/instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = "karpenter.k8s.aws/instance-accelerator-count"
INSTANCE_ACCELERATOR_MEMORY = "karpenter.k8s.aws/instance-accelerator-memory"
INSTANCE_AMI_ID = "karpenter.k8s.aws/instance-ami-id"

AWS_WELL_KNOWN_LABELS = frozenset(
    {
        INSTANCE_HYPERVISOR,
        INSTANCE_ENCRYPTION_IN_TRANSIT,
        INSTANCE_CATEGORY,
        INSTANCE_FAMILY,
        INSTANCE_GENERATION,
        INSTANCE_SIZE,
        INSTANCE_LOCAL_NVME,
        INSTANCE_CPU,
        INSTANCE_MEMORY,
        INSTANCE_NETWORK_BANDWIDTH,
        INSTANCE_PODS,
        INSTANCE_GPU_NAME,
        INSTANCE_GPU_MANUFACTURER,
        INSTANCE_GPU_COUNT,
        INSTANCE_GPU_MEMORY,
        INSTANCE_ACCELERATOR_NAME,
        INSTANCE_ACCELERATOR_MANUFACTURER,
        INSTANCE_ACCELERATOR_COUNT,
        INSTANCE_ACCELERATOR_MEMORY,
    }
)

WELL_KNOWN_LABELS = frozenset(
    {PROVISIONER_NAME, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, CAPACITY_TYPE} | AWS_WELL_KNOWN_LABELS
)

RESTRICTED_LABEL_DOMAINS = frozenset({"kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws"})
LABEL_DOMAIN_EXCEPTIONS = frozenset({"kops.k8s.io", "node.kubernetes.io", "testing.karpenter.sh"})
RESTRICTED_LABELS = frozenset({EMPTINESS_TIMESTAMP, HOSTNAME})

NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "failure-domain.beta.kubernetes.io/region": REGION,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    "topology.ebs.csi.aws.com/zone": ZONE,
}

SUPPORTED_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def normalize_key(key: str) -> str:
    """The canonical key for an alias (`beta.kubernetes.io/arch` -> `kubernetes.io/arch`)."""
    return NORMALIZED_LABELS.get(key, key)


def label_domain(key: str) -> str:
    """The prefix of a label key before `/`, or "" when it has none."""
    return key.split("/", 1)[0] if "/" in key else ""


def _in_domain(domain: str, restricted: str) -> bool:
    return domain == restricted or domain.endswith("." + restricted)


def is_restricted_node_label(key: str) -> bool:
    """True when karpy must not let a user inject this key as a node label (spec §4.2)."""
    if key in WELL_KNOWN_LABELS:
        return True
    domain = label_domain(key)
    if domain in LABEL_DOMAIN_EXCEPTIONS:
        return False
    if any(_in_domain(domain, restricted) for restricted in RESTRICTED_LABEL_DOMAINS):
        return True
    return key in RESTRICTED_LABELS


def is_restricted_label(key: str) -> bool:
    """True when a provisioner label or requirement may not use this key (not well-known, restricted)."""
    return key not in WELL_KNOWN_LABELS and is_restricted_node_label(key)


def restricted_label_message(key: str) -> str:
    """The explanation Karpenter gives for a restricted key, listing what is allowed instead."""
    return (
        f"label {key} is restricted; specify a well known label: {sorted(WELL_KNOWN_LABELS)}, "
        f"or a custom label that does not use a restricted domain: {sorted(RESTRICTED_LABEL_DOMAINS)}"
    )


# Kubernetes' patterns (apimachinery's validation), always applied with `fullmatch`: `re.match`
# with `$` also matched before a trailing newline, so "a\n" passed (issue 20, defect 4). Go's
# regexp `$` is the end of the text. Character classes are ASCII only, as in Go.
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 2**63


def qualified_name_errors(value: str) -> list[str]:
    """Kubernetes' reasons why `value` is not a qualified name (empty list when it is one)."""
    if not isinstance(value, str):
        return ["must be a string"]
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        if len(prefix) > 253:
            return ["prefix part must be no more than 253 characters"]
        if not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return [
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character"
            ]
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character with an optional DNS subdomain prefix and '/'"
        ]
    if not name:
        return ["name part must be non-empty"]
    if len(name) > 63:
        return ["name part must be no more than 63 characters"]
    if not _QUALIFIED_NAME_PART.fullmatch(name):
        return [
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
            "end with an alphanumeric character"
        ]
    return []


def label_value_errors(value: str) -> list[str]:
    """Kubernetes' reasons why `value` is not a label value (empty list when it is one)."""
    if not isinstance(value, str):
        return ["must be a string"]
    if value == "":
        return []
    if len(value) > 63:
        return ["must be no more than 63 characters"]
    if not _QUALIFIED_NAME_PART.fullmatch(value):
        return [
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character"
        ]
    return []


def is_dns1123_subdomain(value: str) -> bool:
    """True for a lower-case RFC 1123 subdomain of at most 253 characters (e.g. a pod's name)."""
    return isinstance(value, str) and len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(value))


def is_dns1035_label(value: str) -> bool:
    """True for a lower-case RFC 1035 label of at most 63 characters."""
    return isinstance(value, str) and len(value) <= 63 and bool(_DNS1035_LABEL.fullmatch(value))


def parse_int(text: object) -> int | None:
    """`text` as Go's `strconv.ParseInt(text, 10, 64)` reads it (how Kubernetes reads a `Gt`/`Lt`
    value and Karpenter validates one): an optional sign and ASCII digits, in int64 range — not
    Python's `int()`, which also takes " 2", "2\n", "2_0" and non-ASCII digits. None otherwise."""
    if not isinstance(text, str) or not _GO_INT.fullmatch(text):
        return None
    number = int(text)
    return number if -_INT64 <= number < _INT64 else None
