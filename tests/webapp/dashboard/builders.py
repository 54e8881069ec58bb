"""A dashboard `Source` over a `ClusterState` fed with plain objects, and canned controller answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.clock import FakeClock
from controller.scheduling.types import Clause
from tests.builders.wire import Obj
from tests.fakes.world import state_of
from webapp.dashboard.source import ControllerAnswers, DashboardInputs, Sample

NOW = 1_704_067_500.0  # 2024-01-01T00:05:00Z, five minutes after the builders' creationTimestamp


@dataclass
class FakeSource:
    """`Source` for tests: the cluster is `objects`, the controller says `answers`."""

    objects: Mapping[str, Sequence[Obj]]
    answers: ControllerAnswers = field(default_factory=ControllerAnswers)
    history: tuple[Sample, ...] = ()
    problem: str = ""
    reads: int = 0
    explained: Mapping[str, tuple[int, Any]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)

    def read(self) -> DashboardInputs:
        self.reads += 1
        state = state_of(self.objects, FakeClock(NOW))
        return DashboardInputs(state.snapshot(), self.answers, self.history, self.problem)

    def compute(self, path: str, body: bytes, timeout: float) -> tuple[int, Any]:
        """The controller's what-if: `explained["POST " + path]`, else a 400 naming the body."""
        self.asked.append(f"POST {path}")
        return self.explained.get(f"POST {path}", (400, {"error": f"manifest: cannot use {body[:20]!r}"}))

    def ask(self, path: str, timeout: float) -> tuple[int, Any]:
        """The controller's explain answers: `explained[path]`, else a minimal answer for an object
        of `objects` (so every link of the pages leads somewhere), else 404."""
        self.asked.append(path)
        if path in self.explained:
            return self.explained[path]
        if path == "/api/v1/savings":
            return 200, {"savingPerHour": 0.0, "lastDay": 0.0, "lastWeek": 0.0, "commands": 0, "since": "",
                         "recent": [], "configMap": "karpy/karpy-savings", "opportunity": {"nodes": []}}  # fmt: skip
        names = {f"/api/v1/explain/nodes/{o['metadata']['name']}" for o in self.objects.get("nodes", ())}
        names |= {
            f"/api/v1/explain/pods/{o['metadata']['namespace']}/{o['metadata']['name']}"
            for o in self.objects.get("pods", ())
        }
        if path in names:
            name = path.rsplit("/", 1)[1]
            if "/nodes/" in path:
                return 200, {"node": name, "found": True, "destinations": [], "newNodes": [], "blockers": [],
                             "consolidation": {"action": "", "whyNot": ""}, "time": "2024-01-01T00:05:00Z"}  # fmt: skip
            return 200, {"pod": path.split("/pods/", 1)[1], "status": "pending", "node": "", "lastEvaluation": None}
        return 404, {"error": f"{path} not found"}


def answers(
    prices: Mapping[str, float] | None = None,
    outlooks: Mapping[str, Mapping[str, str]] | None = None,
    pending: Mapping[str, Sequence[Clause]] | None = None,
    decisions: Sequence[Mapping[str, Any]] = (),
) -> ControllerAnswers:
    nodes: dict[str, dict[str, Any]] = {}
    for name, price in (prices or {}).items():
        nodes.setdefault(name, {})["pricePerHour"] = price
    for name, outlook in (outlooks or {}).items():
        nodes.setdefault(name, {})["outlook"] = dict(outlook)
    reasons = {
        key: {
            "reason": "; ".join(c.text for c in clauses),
            "action": "unschedulable",
            "time": "2024-01-01T00:04:00Z",
            "clauses": [c.to_json() for c in clauses],
        }
        for key, clauses in (pending or {}).items()
    }
    return ControllerAnswers("", nodes, reasons, tuple(decisions))
