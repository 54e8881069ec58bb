"""`karpy controller` wiring: deprovisioning's timings come from the process settings (flags + env)."""

from __future__ import annotations

import argparse

from controller.clock import FakeClock
from controller.deprovisioning.controller import DeprovisioningController
from controller.deprovisioning.types import DeprovisioningSettings
from controller.main import build
from controller.settings import Settings
from tests.fakes.cloudprovider import FakeCloudProvider
from tests.fakes.kube import FakeKube


def _settings(*argv: str, environ: dict[str, str] | None = None) -> Settings:
    parser = argparse.ArgumentParser()
    Settings.add_arguments(parser)
    return Settings.from_args(parser.parse_args(list(argv)), environ=environ or {})


def _deprovisioning(settings: Settings) -> tuple[DeprovisioningController, float]:
    clock = FakeClock()
    app = build(settings, FakeKube(clock), FakeCloudProvider(clock=clock), clock)
    (job,) = [j for j in app.jobs if isinstance(j.controller, DeprovisioningController)]
    assert isinstance(job.controller, DeprovisioningController)
    return job.controller, job.interval


def test_defaults_are_karpenters() -> None:
    controller, interval = _deprovisioning(_settings())
    assert controller.settings == DeprovisioningSettings()
    assert interval == 1.0


def test_flags_and_env_reach_the_deprovisioning_controller() -> None:
    settings = _settings(
        "--validation-wait-seconds", "2",
        "--poll-period-seconds", "1",
        "--deprovisioning-interval-seconds", "0.5",
        environ={"KARPY_REPLACEMENT_TIMEOUT_SECONDS": "60", "KARPY_CONSOLIDATED_RESET_SECONDS": "5"},
    )  # fmt: skip
    controller, interval = _deprovisioning(settings)
    assert controller.settings == DeprovisioningSettings(
        validation_wait_seconds=2, poll_period_seconds=1, replacement_timeout_seconds=60, consolidated_reset_seconds=5
    )
    assert interval == 0.5
