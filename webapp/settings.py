"""Settings of the webapp process: one typed object, each field a CLI flag with an environment twin.

The views read only this object; nothing else reads `os.environ`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MAX_BODY_BYTES = 3 * 1024 * 1024


@dataclass(frozen=True)
class WebappSettings:
    """Where the webapp listens and with which certificates."""

    host: str = "0.0.0.0"
    port: int = 8443
    cert_dir: str | None = None
    workers: int = 2
    kubeconfig: str | None = None
    in_cluster: bool = False  # running in a pod: read the cluster through the service account
    controller_url: str | None = None  # the controller's HTTP API, e.g. http://karpy-controller:8080
    controller_lease: str | None = None  # NAMESPACE/NAME of its Lease: ask the leader (dashboard/leader.py)
    templates_dir: str | None = None  # the dashboard's templates/ (default: found beside the package)
    max_body_bytes: int = MAX_BODY_BYTES
    # The certificate Secret (webapp/certificates.py): off when `cert_secret` is empty.
    cert_secret: str = ""
    cert_namespace: str = "default"
    cert_hosts: tuple[str, ...] = ()
    mutating_webhooks: tuple[str, ...] = ()
    validating_webhooks: tuple[str, ...] = ()
    cert_check_seconds: float = 3600.0
    request_timeout: float = 10.0  # seconds from accepting a connection to its complete request
    # The dashboard's own port (0: the webhook port serves it too) and who may read it
    # ("none", or "kubernetes": bearer token → TokenReview → SubjectAccessReview; webapp/access.py).
    dashboard_port: int = 0
    dashboard_auth: str = "none"

    @property
    def reads_cluster(self) -> bool:
        """The dashboard reads the kube API only when told where it is."""
        return bool(self.kubeconfig) or self.in_cluster

    @staticmethod
    def from_env(**overrides: object) -> WebappSettings:
        """Defaults, then `KARPY_WEBAPP_*` environment variables, then explicit overrides (CLI flags)."""
        env = os.environ
        values: dict[str, object] = {
            "host": env.get("KARPY_WEBAPP_HOST", WebappSettings.host),
            "port": int(env.get("KARPY_WEBAPP_PORT", WebappSettings.port)),
            "cert_dir": env.get("KARPY_WEBAPP_CERT_DIR"),
            "workers": int(env.get("KARPY_WEBAPP_WORKERS", WebappSettings.workers)),
            "kubeconfig": env.get("KUBECONFIG"),
            "in_cluster": bool(env.get("KUBERNETES_SERVICE_HOST")),
            "controller_url": env.get("KARPY_WEBAPP_CONTROLLER_URL"),
            "controller_lease": env.get("KARPY_WEBAPP_CONTROLLER_LEASE"),
            "templates_dir": env.get("KARPY_WEBAPP_TEMPLATES_DIR"),
            "request_timeout": float(env.get("KARPY_WEBAPP_REQUEST_TIMEOUT", WebappSettings.request_timeout)),
            "cert_secret": env.get("KARPY_WEBAPP_CERT_SECRET", ""),
            "cert_namespace": env.get("KARPY_WEBAPP_CERT_NAMESPACE", WebappSettings.cert_namespace),
            "cert_hosts": _names(env.get("KARPY_WEBAPP_CERT_HOSTS")),
            "mutating_webhooks": _names(env.get("KARPY_WEBAPP_MUTATING_WEBHOOKS")),
            "validating_webhooks": _names(env.get("KARPY_WEBAPP_VALIDATING_WEBHOOKS")),
            "cert_check_seconds": float(env.get("KARPY_WEBAPP_CERT_CHECK_SECONDS", WebappSettings.cert_check_seconds)),
            "dashboard_port": int(env.get("KARPY_WEBAPP_DASHBOARD_PORT", WebappSettings.dashboard_port)),
            "dashboard_auth": env.get("KARPY_WEBAPP_DASHBOARD_AUTH", WebappSettings.dashboard_auth),
        }
        values.update({k: (tuple(v) if isinstance(v, list) else v) for k, v in overrides.items() if v is not None})
        settings = WebappSettings(**values)  # type: ignore[arg-type]
        if settings.cert_secret and not (settings.cert_dir and settings.cert_hosts):
            raise ValueError("--cert-secret needs --cert-dir (where the files go) and at least one --cert-host")
        if settings.controller_lease:
            parse_lease(settings.controller_lease)
            if not settings.controller_url:
                raise ValueError("--controller-lease needs --controller-url (its port, and the fallback)")
        if not 0 < settings.request_timeout <= 300:
            raise ValueError(f"request timeout must be from 0 to 300 seconds, got {settings.request_timeout}")
        if settings.dashboard_auth not in ("none", "kubernetes"):
            raise ValueError(f"--dashboard-auth must be none or kubernetes, not {settings.dashboard_auth!r}")
        if settings.dashboard_port and settings.dashboard_port == settings.port:
            raise ValueError("--dashboard-port must differ from --port (or be 0: the dashboard on --port)")
        if not 0 <= settings.dashboard_port <= 65535:
            raise ValueError(f"--dashboard-port must be from 0 to 65535, got {settings.dashboard_port}")
        if not 1 <= settings.cert_check_seconds <= 86400:
            raise ValueError(f"--cert-check-seconds must be from 1 to 86400, got {settings.cert_check_seconds}")
        return settings


def parse_lease(value: str) -> tuple[str, str]:
    """ "NAMESPACE/NAME" → (namespace, name); ValueError naming the flag otherwise."""
    namespace, sep, name = value.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"--controller-lease must be NAMESPACE/NAME, not {value!r}")
    return namespace, name


def _names(raw: str | None) -> tuple[str, ...]:
    """A comma-separated environment value as a tuple of non-empty names."""
    return tuple(n.strip() for n in (raw or "").split(",") if n.strip())
