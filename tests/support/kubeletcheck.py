"""Kubernetes' own kubelet code as a test oracle: `kubeletcheck` (tests/support/go-kubeletcheck/).

`check(cases)` runs each named flag set through the pinned Go program built from Kubernetes'
kubelet packages (flag parsing, `KubeletConfiguration` validation, eviction-threshold parsing) and
returns {name: error text, "" when the kubelet would start}. The binary is built on first use by
`go-kubeletcheck/build.sh` (cached under ~/.cache/karpy/kubeletcheck/<key>; `make test` builds it
before pytest), never committed. Go is looked for on PATH, then in /usr/local/go/bin.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent / "go-kubeletcheck"


@functools.cache
def binary() -> str:
    env = dict(os.environ)
    if shutil.which("go") is None:
        env["PATH"] = env.get("PATH", "") + os.pathsep + "/usr/local/go/bin"
    done = subprocess.run(
        ["bash", str(HERE / "build.sh")], env=env, capture_output=True, text=True, timeout=1800, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"building kubeletcheck failed:\n{done.stderr[-4000:]}")
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("KUBELETCHECK="))
    return line.split("=", 1)[1]


def check(cases: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """{case name: the kubelet's error, or "" when it accepts the flags}."""
    payload = json.dumps([{"name": name, "flags": list(flags)} for name, flags in cases.items()])
    done = subprocess.run([binary()], input=payload, capture_output=True, text=True, timeout=120, check=True)
    return {r["name"]: "" if r["ok"] else str(r.get("error", "")) for r in json.loads(done.stdout)}
