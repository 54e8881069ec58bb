"""The image's rules, checked on the Dockerfile and .dockerignore (no image can be built here).

Multi-stage; the final stage starts from a slim Python, installs and compiles nothing, keeps no
pip, copies only the built virtualenv, runs as a numeric non-root user (what the chart's
runAsNonRoot needs), and its entry point serves both of the chart's commands. Every path the
Dockerfile copies reaches the build context; tests, secrets and local state do not.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from karpy.cli import build_parser
from localcluster.binaries import ensure_binaries

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Instruction:
    op: str
    args: str


def stages(text: str) -> list[list[Instruction]]:
    """The Dockerfile's instructions (continuations joined, comments dropped), per stage."""
    joined = re.sub(r"\\\n", " ", text)
    out: list[list[Instruction]] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        op, _, args = line.partition(" ")
        if op.upper() == "FROM":
            out.append([])
        out[-1].append(Instruction(op.upper(), args.strip()))
    return out


STAGES = stages((REPO / "Dockerfile").read_text())
FINAL = STAGES[-1]


def ops(stage: list[Instruction], op: str) -> list[str]:
    return [i.args for i in stage if i.op == op]


def test_multi_stage_from_a_slim_python() -> None:
    assert len(STAGES) >= 2
    assert all(re.fullmatch(r"python:3\.1[1-9]-slim( AS \w+)?", ops(s, "FROM")[0]) for s in STAGES)
    assert ops(STAGES[0], "FROM")[0].endswith(" AS build")


def test_the_final_stage_builds_and_installs_nothing() -> None:
    for run in ops(FINAL, "RUN"):
        assert run.startswith("rm -rf "), f"only removals run in the final stage: {run}"
    removed = " ".join(ops(FINAL, "RUN"))
    assert "/usr/local/bin/pip" in removed and "site-packages/pip" in removed
    assert ops(FINAL, "COPY") == ["--from=build /opt/karpy /opt/karpy"]
    assert not ops(FINAL, "ADD")
    build = " ".join(ops(STAGES[0], "RUN"))
    assert "pip uninstall --yes pip setuptools wheel" in build  # the virtualenv carries no installer


def test_the_final_stage_runs_as_a_numeric_non_root_user() -> None:
    [user] = ops(FINAL, "USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0 and (not gid or int(gid) != 0)
    assert [i.op for i in FINAL].index("USER") > max(i for i, ins in enumerate(FINAL) if ins.op in ("RUN", "COPY"))
    values = yaml.safe_load((REPO / "charts" / "karpy" / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(uid)


def test_both_entry_points_are_karpy_subcommands() -> None:
    assert ops(FINAL, "ENTRYPOINT") == ['["karpy"]']
    assert ops(FINAL, "CMD") == ['["controller"]']
    rendered = subprocess.run(
        [str(ensure_binaries() / "helm"), "template", "karpy", str(REPO / "charts" / "karpy")],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    commands = set()
    for doc in yaml.safe_load_all(rendered):
        if doc and doc["kind"] == "Deployment":
            [container] = doc["spec"]["template"]["spec"]["containers"]
            assert "command" not in container  # the image's ENTRYPOINT runs
            commands.add(container["args"][0])
            build_parser().parse_args(container["args"])  # the flags the chart passes exist
    assert commands == {"controller", "webapp"}


def ignored(path: str, patterns: list[str]) -> bool:
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        pat = pattern.lstrip("!").rstrip("/")
        candidates = [pat, pat.removeprefix("**/")]
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(p, c) or (fnmatch.fnmatch(parts[-1], c) and c.startswith("*"))
               for c in candidates for p in prefixes):  # fmt: skip
            result = not negate
    return result


_LINES = (REPO / ".dockerignore").read_text().splitlines()
PATTERNS = [line.strip() for line in _LINES if line.strip() and not line.startswith("#")]


def test_what_the_dockerfile_copies_is_in_the_context() -> None:
    copied = [src for stage in STAGES for args in ops(stage, "COPY") if not args.startswith("--from")
              for src in args.split()[:-1]]  # fmt: skip
    assert copied
    for src in copied:
        assert (REPO / src).exists(), src
        assert not ignored(src, PATTERNS), f"{src} is excluded by .dockerignore"


@pytest.mark.parametrize(
    "path",
    [".git/config", ".venv/bin/python", "tests/e2e/test_helm.py", ".dev/cluster/kubeconfig",
     "certs/tls.key", "webapp/__pycache__/x.pyc", "bench/e2e.py", "charts/karpy/values.yaml",
     "localcluster/state.db", "webapp/ca.crt"],
)  # fmt: skip
def test_dockerignore_keeps_out_tests_state_and_secrets(path: str) -> None:
    assert ignored(path, PATTERNS)
