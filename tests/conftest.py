"""Fixtures shared by every test directory: the moto server (AWS) and the test world (`world`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.world import World
from tests.support.moto import CREDENTIALS, MotoServer


@pytest.fixture(scope="session")
def moto_server_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    server = MotoServer.start(tmp_path_factory.mktemp("moto") / "moto.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def moto_server(moto_server_session: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """The session's moto_server, reset: every test starts from an empty account."""
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    moto_server_session.reset()
    return moto_server_session


@pytest.fixture
def world() -> World:
    """A fresh test world (`tests/fakes/world.py`): fake clock, API server and cloud, cluster state."""
    return World.make()
