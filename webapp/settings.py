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
    max_body_bytes: int = MAX_BODY_BYTES

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
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return WebappSettings(**values)  # type: ignore[arg-type]
