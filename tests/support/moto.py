"""A real moto_server (moto pinned in pyproject's dev extras) on a free loopback port.

`MotoServer.start()` launches `python -m moto.server` in its own process group and waits until it
answers; `reset()` clears every backend (`POST /moto-api/reset`) so each test starts from an
empty account; `stop()` ends the process. Credentials are dummies: moto accepts any.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.procs import free_port, stop, wait_until

REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing"}


@dataclass
class MotoServer:
    url: str
    proc: subprocess.Popen[bytes]

    @staticmethod
    def start(log: Path, port: int | None = None) -> MotoServer:
        port = port or free_port()
        out = log.open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        server = MotoServer(f"http://127.0.0.1:{port}", proc)
        wait_until(server._answers, 30, "moto_server", proc)
        return server

    def _answers(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/moto-api/", timeout=2) as r:
            return bool(r.status == 200)

    def reset(self) -> None:
        req = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()

    def client(self, service: str, region: str = REGION) -> Any:
        import boto3

        return boto3.client(
            service, region_name=region, endpoint_url=self.url, aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )  # fmt: skip

    def stop(self) -> None:
        stop(self.proc)


@functools.cache
def _ec2_instance_types() -> dict[str, Any]:
    import gzip
    import json

    import moto.ec2

    with gzip.open(Path(moto.ec2.__file__).parent / "resources" / "instance_types.json.gz", "rt") as f:
        found: dict[str, Any] = json.load(f)
    return found


def ec2_instance_type(name: str) -> dict[str, Any]:
    """One DescribeInstanceTypes entry as moto serves it (its copy of EC2's real answers), for
    tests at the adapter seam that need a real shape (GPUs, Neuron devices, architectures)."""
    return dict(_ec2_instance_types()[name])
