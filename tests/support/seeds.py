"""The reference documents in `../shared/seeds/` and the YAML documents they hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def seeds_dir() -> Path:
    """`shared/seeds` beside the repository (CI lays shared/ next to the clone)."""
    for candidate in (REPO.parent / "shared" / "seeds", REPO / "shared" / "seeds", Path("/work/shared/seeds")):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("shared/seeds not found beside the repository")


def yaml_documents() -> list[tuple[str, dict[str, Any]]]:
    """Every complete YAML document (with apiVersion and kind) in the seeds, with a label."""
    docs = []
    for path in sorted(seeds_dir().glob("*.txt")):
        for i, block in enumerate(re.findall(r"```yaml\n(.*?)```", path.read_text(), flags=re.S)):
            if "apiVersion:" not in block:
                continue  # a fragment (`spec: ...`), not a complete document
            for doc in yaml.safe_load_all(block):
                if isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc:
                    name = (doc.get("metadata") or {}).get("name", "?")
                    docs.append((f"{path.name[:3]}-block{i}-{doc['kind']}-{name}", doc))
    return docs


def provisioner_documents() -> list[tuple[str, dict[str, Any]]]:
    return [(label, doc) for label, doc in yaml_documents() if doc["kind"] == "Provisioner"]


def is_reference_example(doc: dict[str, Any]) -> bool:
    """The full reference example of seed 004: consolidation and ttlSecondsAfterEmpty together."""
    spec = doc.get("spec") or {}
    return bool((spec.get("consolidation") or {}).get("enabled")) and "ttlSecondsAfterEmpty" in spec
