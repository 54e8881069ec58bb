"""The `karpy` command line: one argparse program, one subcommand per job.

The product layer: the only package that ties the others together. `karpy certs generate` and
`karpy webapp` are here; `controller` (`controller_command.py`), `dev` (`dev.py`), `simulate`
and `catalog` (`simulate.py`) are its neighbours, and `cluster` is the local control plane's own
`localcluster.cli`. Every subcommand is imported explicitly: a missing module fails at start.
Errors in user input exit with code 2 and a message, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from karpy import controller_command, dev, explain, simulate
from localcluster import cli as cluster_cli


def _days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"days must be a whole number, got {text!r}") from None
    if not 1 <= days <= 36_500:
        raise argparse.ArgumentTypeError(f"days must be from 1 to 36500, got {days}")
    return days


def _certs(args: argparse.Namespace) -> int:
    from certs import generate

    try:
        paths = generate(args.dir, args.host if args.host is not None else ["127.0.0.1", "localhost"], days=args.days)
    except ValueError as err:
        print(f"karpy certs generate: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"karpy certs generate: cannot write to {args.dir}: {err.strerror or err}", file=sys.stderr)
        return 2
    print(f"CA: {paths.ca_cert}\ncertificate: {paths.cert}\nkey: {paths.key}")
    return 0


def _webapp(args: argparse.Namespace) -> int:
    from webapp.server import serve
    from webapp.settings import WebappSettings

    try:
        settings = WebappSettings.from_env(
            host=args.host,
            port=args.port,
            cert_dir=args.cert_dir,
            workers=args.workers,
            kubeconfig=args.kubeconfig,
            controller_url=args.controller_url,
            controller_lease=args.controller_lease,
            cert_secret=args.cert_secret,
            cert_namespace=args.cert_namespace,
            cert_hosts=args.cert_host,
            mutating_webhooks=args.mutating_webhook,
            validating_webhooks=args.validating_webhook,
            cert_check_seconds=args.cert_check_seconds,
            request_timeout=args.request_timeout,
            dashboard_port=args.dashboard_port,
            dashboard_auth=args.dashboard_auth,
        )
    except ValueError as err:
        print(f"karpy webapp: {err}", file=sys.stderr)
        return 2
    serve(settings)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="karpy", description="Karpenter's node autoscaler, in Python")
    sub = parser.add_subparsers(dest="command", required=True)

    certs = sub.add_parser("certs", help="webhook certificates")
    certs_sub = certs.add_subparsers(dest="certs_command", required=True)
    gen = certs_sub.add_parser("generate", help="make a CA and a serving certificate")
    gen.add_argument("--dir", required=True, help="where to write ca.crt, tls.crt, tls.key")
    gen.add_argument("--host", action="append", help="IP or DNS name for the certificate (repeatable)")
    gen.add_argument("--days", type=_days, default=365, help="validity in days (1 to 36500)")
    gen.set_defaults(func=_certs)

    web = sub.add_parser("webapp", help="serve the admission webhooks (TLS) and the read-only dashboard")
    web.add_argument("--cert-dir", help="directory with tls.crt and tls.key (TLS is off without it)")
    web.add_argument("--port", type=int, help="port (default 8443, env KARPY_WEBAPP_PORT)")
    web.add_argument("--host", help="address to bind (default 0.0.0.0, env KARPY_WEBAPP_HOST)")
    web.add_argument("--workers", type=int, help="gunicorn workers (default 2)")
    web.add_argument("--kubeconfig", help="kubeconfig the dashboard reads the cluster with (default: in-cluster)")
    web.add_argument(
        "--controller-url", help="the controller's HTTP API for the dashboard (env KARPY_WEBAPP_CONTROLLER_URL)"
    )
    web.add_argument(
        "--controller-lease",
        help="NAMESPACE/NAME of the controller's Lease: the dashboard asks the leader replica "
        "(env KARPY_WEBAPP_CONTROLLER_LEASE)",
    )
    web.add_argument(
        "--cert-secret",
        help="keep the CA and serving certificate in this Secret: read or create it, rotate it, write the files "
        "to --cert-dir and set the webhooks' caBundle (env KARPY_WEBAPP_CERT_SECRET)",
    )
    web.add_argument("--cert-namespace", help="namespace of --cert-secret (env KARPY_WEBAPP_CERT_NAMESPACE)")
    web.add_argument("--cert-host", action="append", help="DNS name or IP the certificate names (repeatable)")
    web.add_argument("--mutating-webhook", action="append", help="MutatingWebhookConfiguration to patch (repeatable)")
    web.add_argument(
        "--validating-webhook", action="append", help="ValidatingWebhookConfiguration to patch (repeatable)"
    )
    web.add_argument("--cert-check-seconds", type=float, help="how often the Secret is checked (default 3600)")
    web.add_argument(
        "--request-timeout",
        type=float,
        help="seconds a client has from connecting to its whole request, TLS handshake included (default 10, "
        "env KARPY_WEBAPP_REQUEST_TIMEOUT)",
    )
    web.add_argument(
        "--dashboard-port", type=int, help="serve the dashboard on this port (default 0: on --port, with the webhooks)"
    )
    web.add_argument(
        "--dashboard-auth",
        choices=["none", "kubernetes"],
        help="who may read the dashboard: anyone, or a bearer token Kubernetes authorizes for "
        "get dashboard.karpy.sh (TokenReview + SubjectAccessReview; default none)",
    )
    web.set_defaults(func=_webapp)

    cluster_cli.register(sub)
    simulate.register(sub)
    controller_command.register(sub)
    dev.register(sub)
    explain.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    return result
