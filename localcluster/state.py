"""The state file (`DIR/state.json`): what `up` started, so `status`/`down` work from any process.

Neighbours: `procs.Proc` is what each entry records; `cluster.py` writes and reads the file.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localcluster.procs import Proc

STATE_FILE = "state.json"


@dataclass
class ClusterState:
    dir: str
    bin_dir: str
    kubeconfig: str
    server: str
    etcd_data_dir: str
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)
    owner_pid: int = 0
    ready_seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> ClusterState:
        raw: dict[str, Any] = json.loads(text)
        procs = [Proc(**p) for p in raw.pop("procs", [])]
        return ClusterState(procs=procs, **raw)


def state_path(directory: Path) -> Path:
    return directory / STATE_FILE


def load(directory: Path) -> ClusterState | None:
    try:
        return ClusterState.from_json(state_path(directory).read_text())
    except FileNotFoundError:
        return None


def save(directory: Path, state: ClusterState) -> None:
    tmp = state_path(directory).with_suffix(".tmp")
    tmp.write_text(state.to_json())
    os.replace(tmp, state_path(directory))


def remove(directory: Path) -> None:
    state_path(directory).unlink(missing_ok=True)
