"""Find the control plane binaries, building them with `build.sh` when any is missing.

`build.sh` owns the cache layout and the cache key (pins + go.sum files + Go version), so this
module asks it for the directory instead of recomputing the key. Setting
`KARPY_LOCALCLUSTER_BIN` to a directory that already holds every binary skips the script.
Missing binaries are built, never skipped: a test run without a real apiserver is not a test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "helm",
)
BUILD_SCRIPT = Path(__file__).resolve().parent / "build.sh"
ENV_BIN = "KARPY_LOCALCLUSTER_BIN"


class BuildError(RuntimeError):
    """The build script failed or did not produce every binary."""


def _missing(bin_dir: Path) -> list[str]:
    return [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]


def cached_bin_dir() -> Path:
    """The cache directory for the current pins (it may not hold every binary yet)."""
    override = os.environ.get(ENV_BIN)
    if override:
        return Path(override)
    out = subprocess.run(["bash", str(BUILD_SCRIPT), "--print-bin-dir"], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def build(stream: bool = True) -> Path:
    """Run `build.sh` (a no-op when everything is cached) and return the bin directory."""
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        stdout=subprocess.PIPE,
        stderr=None if stream else subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        detail = "" if stream else f"\n{proc.stderr[-4000:]}"
        raise BuildError(f"{BUILD_SCRIPT} failed with exit code {proc.returncode}{detail}")
    for line in proc.stdout.splitlines():
        if line.startswith(ENV_BIN + "="):
            return Path(line.split("=", 1)[1])
    raise BuildError(f"{BUILD_SCRIPT} did not print {ENV_BIN}=...")


def ensure_binaries() -> Path:
    """The bin directory with every binary present, building what is missing first."""
    bin_dir = cached_bin_dir()
    missing = _missing(bin_dir)
    if not missing:
        return bin_dir
    if os.environ.get(ENV_BIN):
        raise BuildError(f"{ENV_BIN}={bin_dir} lacks {', '.join(missing)}")
    print(
        f"localcluster: building {', '.join(missing)} (a cold build takes a long while) ...",
        file=sys.stderr,
        flush=True,
    )
    bin_dir = build()
    missing = _missing(bin_dir)
    if missing:
        raise BuildError(f"after the build, {bin_dir} still lacks {', '.join(missing)}")
    return bin_dir
