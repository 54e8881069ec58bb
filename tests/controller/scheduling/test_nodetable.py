"""Node rows and classes (`controller/scheduling/nodetable.py`)."""

from __future__ import annotations

import numpy as np

from controller.core.requirements import Requirements
from controller.scheduling.nodetable import NodeTable
from controller.scheduling.types import HostPort


def test_classes_are_shared_and_rows_grow() -> None:
    t = NodeTable(resources=2, capacity=2)
    reqs = Requirements.from_labels({"zone": "a"})
    cls = t.node_class(0, (), reqs)
    assert t.node_class(0, (), Requirements.from_labels({"zone": "a"})) is cls
    assert t.node_class(1, (), reqs) is not cls
    for i in range(5):
        t.add(f"n{i}", cls, np.array([1, 1]), np.array([4, 4]), target=True, new=True)
    assert t.capacity == 8 and t.n == 5
    assert t.present == {cls.id: 5}
    assert t.fits(np.array([3, 3]), t.n).tolist() == [True] * 5
    t.charge(0, np.array([3, 0]))
    assert t.fits(np.array([1, 1]), t.n).tolist() == [False, True, True, True, True]
    t.set_class(0, t.node_class(1, (), reqs))
    assert t.present == {cls.id: 4, 1: 1}
    assert t.requirements(0)["kubernetes.io/hostname"].values == {"n0"}


def test_host_ports() -> None:
    t = NodeTable(resources=1)
    cls = t.node_class(0, (), Requirements())
    t.add("n", cls, np.array([0]), np.array([1]), target=True, new=True)
    t.take_ports(0, (HostPort(8080, "TCP", "10.0.0.1"),))
    assert not t.ports_free(0, (HostPort(8080),))
    assert not t.ports_free(0, (HostPort(8080, "TCP", "10.0.0.1"),))
    assert t.ports_free(0, (HostPort(8080, "TCP", "10.0.0.2"),))
    assert t.ports_free(0, (HostPort(8080, "UDP"),))
