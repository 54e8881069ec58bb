"""The overview's chart: the last hour (at least five minutes) scaled into the SVG box."""

from __future__ import annotations

from webapp.dashboard.overview import CHART_HEIGHT, CHART_WIDTH, chart, consolidation_pass
from webapp.dashboard.source import Sample

NOW = 10_000.0


def test_an_hour_of_samples_spans_the_width_and_the_maximum_touches_the_top() -> None:
    samples = tuple(Sample(NOW - 3600 + 600 * k, k, 0.5 * k) for k in range(7))
    got = chart((Sample(NOW - 7200, 99, 99.0), *samples), NOW)  # older than an hour: left out
    assert got["spanSeconds"] == 3600 and got["maxNodes"] == 6 and got["maxCostPerHour"] == 3.0
    points = [tuple(map(float, p.split(","))) for p in got["nodesPoints"].split()]
    assert points[0] == (0.0, CHART_HEIGHT) and points[-1] == (CHART_WIDTH, 10.0)


def test_a_young_webapp_charts_at_least_five_minutes() -> None:
    got = chart((Sample(NOW - 30, 2, 1.0), Sample(NOW, 3, 1.5)), NOW)
    assert got["spanSeconds"] == 300
    assert (
        got["nodesPoints"] == f"{CHART_WIDTH * 270 / 300:.1f},{CHART_HEIGHT - 2 / 3 * 110:.1f} {CHART_WIDTH:.1f},10.0"
    )


def test_no_history_draws_nothing() -> None:
    got = chart((), NOW)
    assert got["nodesPoints"] == "" and got["costPoints"] == "" and got["samples"] == []


def test_the_last_consolidation_pass_is_read_from_the_controllers_answer() -> None:
    covered = {"multinodeconsolidation": 1000, "singlenodeconsolidation": 7, "x": "bad"}
    answer = {"time": "2024-01-01T00:00:00Z", "seconds": 12.5, "complete": False,
              "stoppedIn": "singlenodeconsolidation", "eligible": 1000, "covered": covered}  # fmt: skip
    shown = consolidation_pass(answer)
    assert shown["seconds"] == 12.5 and shown["complete"] is False and shown["eligible"] == 1000
    assert shown["covered"] == {"multinodeconsolidation": 1000, "singlenodeconsolidation": 7}
    assert shown["waiting"] == ""
    assert consolidation_pass({}) == {}  # no pass yet (or an older controller): nothing shown


def test_a_pass_whose_consolidation_waited_for_kube_scheduler_says_why() -> None:
    why = "3 pod(s) not yet decided by kube-scheduler (the oldest default/a): their room stays"
    answer = {"time": "2024-01-01T00:00:00Z", "seconds": 0.1, "complete": True, "waiting": why, "covered": {}}
    assert consolidation_pass(answer)["waiting"] == why
