"""Command lines of the control plane components (shared/notes/local-control-plane.md section 5).

Pure: each function turns a `Layout` (paths and ports) into an argv. Neighbours: `cluster.py`
starts them in this order: etcd, then everything else at once (the clients retry until the
apiserver answers), which is what keeps a warm start short.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localcluster.pki import Pki

KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake"
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"
POD_CIDR = "10.244.0.0/16"
NODE_IP = "10.240.0.1"  # every kwok node reports this InternalIP
KUBE_API_QPS = 200
KUBE_API_BURST = 400
# kube-scheduler binds the pods karpy leaves to it (zonal spread, affinity) and marks every pending
# pod unschedulable: at 200 qps its client throttled bindings by up to 1 s in the 5,000-pod
# benchmark. kwokctl runs it with these values.
SCHEDULER_API_QPS = 5000
SCHEDULER_API_BURST = 10000
# kwok plays the kubelet of every node with this many pod workers (default 4): pods bound by the
# thousand otherwise wait seconds for a handful of workers to report them Running.
KWOK_POD_PARALLELISM = 16

# What the tests and karpy need from kube-controller-manager: workloads make pods, namespaces and
# garbage get cleaned up, ServiceAccounts exist (so the ServiceAccount admission plugin stays on),
# node-lifecycle lifts the not-ready taint once kwok reports a node Ready and taint-eviction
# evicts from NoExecute-tainted nodes. Canonical names (1.28+).
KCM_CONTROLLERS = ",".join(
    f"{name}-controller"
    for name in (
        "deployment",
        "replicaset",
        "daemonset",
        "statefulset",
        "job",
        "cronjob",
        "ttl-after-finished",
        "garbage-collector",
        "namespace",
        "serviceaccount",
        "serviceaccount-token",
        "root-ca-certificate-publisher",
        "clusterrole-aggregation",
        "node-lifecycle",
        "taint-eviction",
        "pod-garbage-collector",
        "disruption",
        "endpoints",
        "endpointslice",
        "resourcequota",
        "persistentvolume-binder",
        "persistentvolumeclaim-protection",
        "ephemeral-volume",
    )
)


@dataclass(frozen=True)
class Layout:
    bin_dir: Path
    dir: Path
    pki: Pki
    kubeconfig: Path
    etcd_data_dir: Path
    etcd_port: int
    etcd_peer_port: int
    apiserver_port: int
    kcm_port: int
    scheduler_port: int
    kwok_port: int

    def bin(self, name: str) -> str:
        return str(self.bin_dir / name)


def etcd(lay: Layout) -> list[str]:
    client = f"http://127.0.0.1:{lay.etcd_port}"
    peer = f"http://127.0.0.1:{lay.etcd_peer_port}"
    return [
        lay.bin("etcd"),
        "--name=karpy",
        f"--data-dir={lay.etcd_data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=karpy={peer}",
        "--unsafe-no-fsync=true",
        "--auto-compaction-retention=1",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
    ]


def apiserver(lay: Layout) -> list[str]:
    pki = lay.pki
    return [
        lay.bin("kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{lay.etcd_port}",
        "--bind-address=127.0.0.1",
        f"--secure-port={lay.apiserver_port}",
        # No default route may exist here, and loopback endpoints are refused for the
        # `kubernetes` Service: advertise 127.0.0.1 and do not reconcile endpoints.
        "--advertise-address=127.0.0.1",
        "--endpoint-reconciler-type=none",
        f"--cert-dir={lay.dir / 'apiserver'}",
        f"--tls-cert-file={pki.apiserver_crt}",
        f"--tls-private-key-file={pki.apiserver_key}",
        f"--client-ca-file={pki.ca_crt}",
        f"--service-account-issuer=https://127.0.0.1:{lay.apiserver_port}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=RBAC",
        "--allow-privileged=true",
        # One fewer moving part on two cores; nothing here tests API fairness.
        "--enable-priority-and-fairness=false",
        "--profiling=false",
        "--v=1",
    ]


def _component_common(
    lay: Layout, port: int, name: str, qps: int = KUBE_API_QPS, burst: int = KUBE_API_BURST
) -> list[str]:
    kc = str(lay.kubeconfig)
    return [
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        # Client rate limits (defaults: controller manager 20 qps, scheduler 50): the ReplicaSet
        # controller would otherwise create 1,000 pods in no less than 50 s.
        f"--kube-api-qps={qps}",
        f"--kube-api-burst={burst}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={lay.dir / name}",
        "--profiling=false",
        "--v=1",
    ]


def controller_manager(lay: Layout) -> list[str]:
    return [
        lay.bin("kube-controller-manager"),
        *_component_common(lay, lay.kcm_port, "kube-controller-manager"),
        f"--controllers={KCM_CONTROLLERS}",
        f"--service-account-private-key-file={lay.pki.sa_key}",
        f"--root-ca-file={lay.pki.ca_crt}",
        "--use-service-account-credentials=false",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--concurrent-deployment-syncs=5",
    ]


def scheduler(lay: Layout) -> list[str]:
    return [
        lay.bin("kube-scheduler"),
        *_component_common(lay, lay.scheduler_port, "kube-scheduler", SCHEDULER_API_QPS, SCHEDULER_API_BURST),
    ]


def kwok_config() -> str:
    """kwok's configuration file (`kwok.yaml` in the cluster directory); its default stages stay."""
    return (
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\n"
        "kind: KwokConfiguration\n"
        "options:\n"
        f"  podPlayStageParallelism: {KWOK_POD_PARALLELISM}\n"
    )


def kwok(lay: Layout, node_selector: str = KWOK_NODE_SELECTOR) -> list[str]:
    return [
        lay.bin("kwok"),
        f"--config={lay.dir / 'kwok.yaml'}",
        f"--kubeconfig={lay.kubeconfig}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-label-selector={node_selector}",
        f"--cidr={POD_CIDR}",
        f"--node-ip={NODE_IP}",
        "--node-lease-duration-seconds=40",
        # Only for /healthz; kwok starts this server once its controllers run.
        f"--server-address=127.0.0.1:{lay.kwok_port}",
    ]
