"""`karpy cluster up|down|status|build`: the local control plane from the command line.

`register(subparsers)` adds the `cluster` command to an argparse CLI; every leaf sets
`func(args) -> int`, so the host CLI dispatches with `sys.exit(args.func(args))`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from localcluster.binaries import BuildError, build
from localcluster.cluster import ClusterError, LocalCluster
from localcluster.manifests import ManifestError
from localcluster.procs import NotReadyError

DEFAULT_DIR = Path(".dev/cluster")
_FAILURES = (ClusterError, ManifestError, NotReadyError, BuildError, OSError)


def _up(args: argparse.Namespace) -> int:
    if args.webhooks and not (args.webhook_url_base and args.webhook_ca):
        print("cluster up --webhooks needs --webhook-url-base and --webhook-ca", file=sys.stderr)
        return 2
    cluster = LocalCluster(args.dir)
    try:
        state = cluster.up(timeout=args.timeout, detach=True)
        if args.webhooks:
            cluster.install_webhooks(args.webhook_url_base, Path(args.webhook_ca).read_bytes())
    except _FAILURES as err:
        print(f"cluster up: {err}", file=sys.stderr)
        cluster.down()
        return 1
    print(f"cluster ready in {state.ready_seconds:.1f}s; logs in {cluster.dir / 'logs'}", file=sys.stderr)
    print(f"export KUBECONFIG={cluster.kubeconfig}", file=sys.stderr)
    print(cluster.kubeconfig)
    return 0


def _down(args: argparse.Namespace) -> int:
    stopped = LocalCluster(args.dir).down()
    print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running", file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    status = LocalCluster(args.dir).status()
    if not status.components:
        print(f"no cluster in {Path(args.dir).resolve()}")
        return 1
    for name, alive in status.components.items():
        print(f"{name:<24} {'running' if alive else 'STOPPED'}")
    print(f"{'server':<24} {status.server} ({'ready' if status.ready else 'NOT ready'})")
    print(f"{'kubeconfig':<24} {status.kubeconfig}")
    return 0 if status.ready else 1


def _build(args: argparse.Namespace) -> int:
    try:
        print(build())
    except BuildError as err:
        print(f"cluster build: {err}", file=sys.stderr)
        return 1
    return 0


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add `cluster {up,down,status,build}` to an `add_subparsers()` object."""
    cluster: argparse.ArgumentParser = subparsers.add_parser(
        "cluster", help="a local Kubernetes control plane (etcd, apiserver, kwok)"
    )
    verbs = cluster.add_subparsers(dest="cluster_command", required=True)

    def with_dir(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="cluster data, logs, kubeconfig (%(default)s)")
        return p

    up = with_dir(verbs.add_parser("up", help="start the cluster; prints the kubeconfig path when ready"))
    up.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for readiness")
    up.add_argument("--webhooks", action="store_true", help="register karpy's admission webhooks")
    up.add_argument("--webhook-url-base", help="e.g. https://127.0.0.1:8443")
    up.add_argument("--webhook-ca", help="PEM file of the CA that signed the webhook's certificate")
    up.set_defaults(func=_up)
    with_dir(verbs.add_parser("down", help="stop every process the cluster started")).set_defaults(func=_down)
    with_dir(verbs.add_parser("status", help="show the components and readiness")).set_defaults(func=_status)
    verbs.add_parser("build", help="build/cache the control plane binaries").set_defaults(func=_build)
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="localcluster")
    commands = parser.add_subparsers(dest="command", required=True)
    register(commands)
    args = parser.parse_args(["cluster", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args))
