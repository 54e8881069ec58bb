"""Kubernetes timestamps (`controller/core/timestamps.py`)."""

from __future__ import annotations

from controller.core.timestamps import format_micro_timestamp, format_timestamp, parse_timestamp


def test_round_trip_at_second_precision() -> None:
    assert format_timestamp(1_700_000_000.7) == "2023-11-14T22:13:20Z"
    assert parse_timestamp("2023-11-14T22:13:20Z") == 1_700_000_000.0


def test_micro_time_keeps_microseconds() -> None:
    assert format_micro_timestamp(1_700_000_000.25) == "2023-11-14T22:13:20.250000Z"
    assert parse_timestamp("2023-11-14T22:13:20.250000Z") == 1_700_000_000.25


def test_absent_or_malformed_is_none() -> None:
    assert parse_timestamp(None) is None
    assert parse_timestamp("") is None
    assert parse_timestamp("yesterday") is None


def test_timestamps_are_utc() -> None:
    assert format_timestamp(0) == "1970-01-01T00:00:00Z"
    assert parse_timestamp("2024-01-01T00:00:42+00:00") == parse_timestamp("2024-01-01T00:00:42Z") == 1_704_067_242.0
