"""The ports tests/live_server.py hands its servers: a server killed and started again must
find its ports free, so none may come from the range the kernel gives outgoing connections."""

from __future__ import annotations

import pytest

from tests.live_server import EPHEMERAL_PORTS, PORTS_EACH, free_port, own_ports


def test_free_ports_lie_outside_the_ephemeral_range_and_are_never_handed_out_twice() -> None:
    low, high = (int(bound) for bound in EPHEMERAL_PORTS.read_text().split())
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == len(ports)
    assert all(port in own_ports() and not low <= port <= high for port in ports), ports


def test_each_process_running_tests_has_ports_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    slices = []
    for run in ("0", "1"):  # make test's two passes, side by side
        monkeypatch.setenv("TEST_RUN", run)
        for worker in ("gw0", "gw1", "gw7"):
            monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
            slices.append(set(own_ports()))
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    slices.append(set(own_ports()))  # a benchmark, outside xdist
    assert all(len(ports) == PORTS_EACH for ports in slices)
    assert all(a.isdisjoint(b) for i, a in enumerate(slices) for b in slices[i + 1 :])
