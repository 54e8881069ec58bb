"""`karpy` command line: bad input exits with code 2 and a message, never a traceback (issue 14, item 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from karpy.cli import main

PROVISIONER = {
    "apiVersion": "karpenter.sh/v1alpha5",
    "kind": "Provisioner",
    "metadata": {"name": "default"},
    "spec": {},
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:  # argparse refuses a flag value
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", ""], "host"),
        (["--host", "ünïcode.example"], "host"),
        (["--host", "bad host"], "host"),
        (["--host", "a" * 300], "host"),
        (["--days", "-1"], "days"),
        (["--days", "0"], "days"),
        (["--days", "100000000"], "days"),
        (["--days", "ten"], "days"),
    ],
)
def test_certs_generate_refuses_bad_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    code, err = run(capsys, "certs", "generate", "--dir", str(tmp_path / "certs"), *args)
    assert code == 2 and message in err
    assert not (tmp_path / "certs" / "tls.crt").exists()


def test_certs_generate_into_a_file_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, err = run(capsys, "certs", "generate", "--dir", str(blocker), "--host", "127.0.0.1")
    assert code == 2 and str(blocker) in err


def test_certs_generate_still_works(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _ = run(
        capsys,
        "certs",
        "generate",
        "--dir",
        str(tmp_path),
        "--host",
        "127.0.0.1",
        "--days",
        "1",
        "--host",
        "karpy-webhook.karpy.svc",
    )
    assert code == 0 and (tmp_path / "tls.crt").exists()


def simulate(capsys: pytest.CaptureFixture[str], tmp_path: Path, pods: bytes) -> tuple[int, str]:
    provisioners = tmp_path / "provisioners.yaml"
    provisioners.write_text(yaml.safe_dump(PROVISIONER))
    pods_file = tmp_path / "pods.yaml"
    pods_file.write_bytes(pods)
    return run(capsys, "simulate", "--provisioners", str(provisioners), "--pods", str(pods_file))


def deployment(replicas: int) -> bytes:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}},
    }
    return yaml.safe_dump(doc).encode()


def test_simulate_refuses_a_file_that_is_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = simulate(capsys, tmp_path, b"kind: Pod\nmetadata: {name: \xff\xfe}\n")
    assert code == 2 and "UTF-8" in err


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 400))])
def test_simulate_refuses_deeply_nested_yaml(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str) -> None:
    code, err = simulate(capsys, tmp_path, text.encode())
    assert code == 2 and "nested" in err


def test_simulate_refuses_more_pods_than_it_can_hold(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, err = simulate(capsys, tmp_path, deployment(100_000_000))
    assert code == 2 and "replicas" in err and "100000000" in err


def test_simulate_still_runs_a_deployment(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _ = simulate(capsys, tmp_path, deployment(3))
    assert code == 0
