"""A real local Kubernetes control plane for karpy's tests and `make dev`.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built from pinned Go
modules by `build.sh` and cached outside the repository, run as local processes:

    from localcluster import LocalCluster
    cluster = LocalCluster("/tmp/k")
    cluster.up()                       # returns when ready; CRDs installed
    cluster.kubectl("get", "nodes")
    cluster.install_webhooks("https://127.0.0.1:8443", ca_pem)
    cluster.down()

`localcluster.cli.register` adds `karpy cluster up|down|status|build`.
"""

from localcluster.binaries import BuildError, ensure_binaries
from localcluster.cluster import ClusterError, ClusterStatus, LocalCluster
from localcluster.components import KWOK_NODE_SELECTOR
from localcluster.manifests import MUTATING_NAME, VALIDATING_NAME, ManifestError
from localcluster.procs import NotReadyError

__all__ = [
    "KWOK_NODE_SELECTOR",
    "MUTATING_NAME",
    "VALIDATING_NAME",
    "BuildError",
    "ClusterError",
    "ClusterStatus",
    "LocalCluster",
    "ManifestError",
    "NotReadyError",
    "ensure_binaries",
]
