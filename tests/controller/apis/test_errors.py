"""Rendering field errors: merged, sorted, and bounded however many there are (issue 14, item 2)."""

from __future__ import annotations

import json

from controller.apis.admission import review
from controller.apis.errors import MAX_LINES, MAX_PATHS, FieldError, render
from controller.apis.validation import requirement_errors


def test_errors_with_the_same_message_merge_their_paths_sorted() -> None:
    errors = [FieldError("bad", ("b",)), FieldError("bad", ("a", "b")), FieldError("other", ("c",), "why")]
    assert render(errors) == "bad: a, b\nother: c\nwhy"


def test_forty_thousand_duplicate_paths_render_a_short_message() -> None:
    errors = [FieldError("duplicate taint Key/Effect pair a=NoSchedule", (f"spec.taints[{i}]",)) for i in range(40_000)]
    errors += errors  # the same path twice is named once
    text = render(errors)
    first = "spec.taints[0], spec.taints[1], spec.taints[2]"  # indexes in numeric order
    assert text.startswith(f"duplicate taint Key/Effect pair a=NoSchedule: {first}")
    assert text.count("spec.taints[") == MAX_PATHS
    assert text.endswith(f"and {40_000 - MAX_PATHS} more")


def test_many_distinct_messages_are_cut_after_max_lines() -> None:
    text = render(FieldError(f"problem {i:05d}", ("p",)) for i in range(10_000))
    lines = text.split("\n")
    assert len(lines) == MAX_LINES + 1
    assert lines[0] == "problem 00000: p" and lines[-1] == f"… and {10_000 - MAX_LINES} more errors"


def test_a_requirement_with_a_long_bad_key_and_many_bad_values_stays_small() -> None:
    key = "k" * 40_000 + "/!"
    values = [f"bad value {i}!" for i in range(5_000)] + ["bad value 0!"] * 5_000
    errors = requirement_errors({"key": key, "operator": "In", "values": values}, "spec.requirements[0]")
    text = render(errors)
    assert len(text) < 8_000
    assert "bad value 0!" in text and "and 4990 more invalid values" in text


def test_an_80_kb_review_answers_a_bounded_denial() -> None:
    key = "x" * 40_000 + "/"
    obj = {
        "apiVersion": "karpenter.sh/v1alpha5",
        "kind": "Provisioner",
        "metadata": {"name": "p"},
        "spec": {"requirements": [{"key": key, "operator": "In", "values": ["!"] * 10_000}]},
    }
    request = {
        "uid": "u",
        "operation": "CREATE",
        "object": obj,
        "kind": {"group": "karpenter.sh", "version": "v1alpha5", "kind": "Provisioner"},
    }
    body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
    assert len(body) < 100_000
    status, answer = review(body, mutate=False)
    assert status == 200 and answer["response"]["allowed"] is False
    assert len(json.dumps(answer)) < 16_000
