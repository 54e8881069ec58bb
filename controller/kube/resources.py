"""The kinds karpy reads and writes, and their REST paths (pure constants)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True)
class Kind:
    name: str  # the key used by cluster state: "pods", "nodes", …
    group_version: str  # "v1" or "apps/v1"
    plural: str
    namespaced: bool

    def collection(self, namespace: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced and namespace:
            return f"{base}/namespaces/{quote(namespace, safe='')}/{self.plural}"
        return f"{base}/{self.plural}"

    def item(self, name: str, namespace: str | None = None) -> str:
        """The object's path; a name read from elsewhere (a Lease holder) is one path segment,
        escaped, so "../secrets/x" cannot walk to another resource (issue 20, defect 8)."""
        return f"{self.collection(namespace)}/{quote(name, safe='')}"


PODS = Kind("pods", "v1", "pods", True)
NODES = Kind("nodes", "v1", "nodes", False)
PROVISIONERS = Kind("provisioners", "karpenter.sh/v1alpha5", "provisioners", False)
AWSNODETEMPLATES = Kind("awsnodetemplates", "karpenter.k8s.aws/v1alpha1", "awsnodetemplates", False)
DAEMONSETS = Kind("daemonsets", "apps/v1", "daemonsets", True)
PDBS = Kind("poddisruptionbudgets", "policy/v1", "poddisruptionbudgets", True)
EVENTS = Kind("events", "v1", "events", True)
LEASES = Kind("leases", "coordination.k8s.io/v1", "leases", True)
CONFIGMAPS = Kind("configmaps", "v1", "configmaps", True)
CLAIMS = Kind("persistentvolumeclaims", "v1", "persistentvolumeclaims", True)
VOLUMES = Kind("persistentvolumes", "v1", "persistentvolumes", False)
STORAGECLASSES = Kind("storageclasses", "storage.k8s.io/v1", "storageclasses", False)
CSINODES = Kind("csinodes", "storage.k8s.io/v1", "csinodes", False)
CONFIGMAPS = Kind("configmaps", "v1", "configmaps", True)

WATCHED = (PODS, NODES, PROVISIONERS, AWSNODETEMPLATES, DAEMONSETS, PDBS, CLAIMS, VOLUMES, STORAGECLASSES, CSINODES)
