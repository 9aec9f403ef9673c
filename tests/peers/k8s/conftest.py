"""The `cluster` tier's control plane: one per session, started when a test first asks for it, stopped (and checked
to leave nothing behind) at the end; skipped, saying why, where it cannot be had (controlplane.unavailable)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.peers.k8s.controlplane import ControlPlane, running, unavailable


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(f"no local Kubernetes control plane: {reason}")
    dir: Path = tmp_path_factory.mktemp("k8s") / "plane"
    plane = ControlPlane.up(dir)
    pids = plane.pids()
    print(f"\ncontrol plane up in {plane.started:.1f} s: {plane.timings}")
    yield plane
    plane.down()
    left = {name: pid for name, pid in pids.items() if running(pid)}
    assert not left, f"still running after cluster.sh down: {left}"
    assert not dir.exists(), f"{dir} left behind"
