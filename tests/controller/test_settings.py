"""The controller's settings: flags win over KARPY_* environment, which wins over defaults."""

from __future__ import annotations

import argparse

import pytest

from controller.settings import Settings


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    Settings.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults() -> None:
    s = Settings.from_args(parse(), environ={})
    assert (s.batch_idle_seconds, s.batch_max_seconds, s.bind_pods, s.leader_elect) == (1.0, 10.0, True, True)


def test_flag_beats_env_beats_default() -> None:
    env = {"KARPY_BATCH_IDLE_SECONDS": "2.5", "KARPY_BIND_PODS": "false", "KARPY_HTTP_PORT": "9000"}
    s = Settings.from_args(parse("--batch-idle-seconds", "0.5"), environ=env)
    assert s.batch_idle_seconds == 0.5 and s.bind_pods is False and s.http_port == 9000


def test_kubeconfig_falls_back_to_KUBECONFIG() -> None:
    assert Settings.from_args(parse(), environ={"KUBECONFIG": "/k"}).kubeconfig == "/k"


@pytest.mark.parametrize(
    ("env", "field"), [({"KARPY_HTTP_PORT": "x"}, "http-port"), ({"KARPY_BIND_PODS": "maybe"}, "bind-pods")]
)
def test_bad_values_name_the_setting(env: dict[str, str], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Settings.from_args(parse(), environ=env)


@pytest.mark.parametrize("value", ["", "  ", "aws:owner"])
def test_an_unusable_ownership_tag_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="aws-ownership-tag"):
        Settings.from_args(parse(), environ={"KARPY_AWS_OWNERSHIP_TAG": value})


def test_a_cluster_name_is_required_with_aws_only() -> None:
    aws = Settings.from_args(parse("--cloud-provider", "aws", "--aws-region", "eu-west-1"), environ={})
    assert aws.cluster_name == ""  # the ConfigMap may still give it: the watch and main decide
    with pytest.raises(ValueError, match="cluster-name: required with --cloud-provider aws"):
        aws.require_cluster_name()
    blank = Settings.from_args(parse("--cloud-provider", "aws", "--cluster-name", " "), {"AWS_REGION": "x"})
    with pytest.raises(ValueError, match="cluster-name: required"):
        blank.require_cluster_name()
    Settings.from_args(
        parse("--cloud-provider", "aws", "--cluster-name", "p"), {"AWS_REGION": "x"}
    ).require_cluster_name()
    Settings.from_args(parse(), environ={}).require_cluster_name()  # the simulated cloud runs as karpy


def test_consolidation_order_is_first_by_default_value_on_request_and_nothing_else() -> None:
    assert Settings.from_args(parse(), environ={}).consolidation_order == "first"
    assert Settings.from_args(parse("--consolidation-order", "value"), environ={}).consolidation_order == "value"
    with pytest.raises(ValueError, match="consolidation-order: must be first or value, not 'best'"):
        Settings.from_args(parse(), environ={"KARPY_CONSOLIDATION_ORDER": "best"})
