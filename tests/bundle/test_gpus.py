"""The bundle keeps the GPUs read with its live stacks (issue 30): stacks.json names each GPU process by its rank."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from logphase.bundle.build import BundleRequest, collect
from logphase.bundle.live import LiveStacks
from logphase.packs import load_packs
from logphase.stacks.nvml import read_gpus
from tests.conftest import FIXTURES
from tests.stacks.fake_nvml import FakeGpu, FakeNvml
from tests.stacks.test_nvml import NOW, snapshot, us

DEMO = FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log"


def test_the_bundle_keeps_the_gpus_read_with_its_live_stacks(tmp_path: Path) -> None:
    # GIVEN live stacks of two ranks on host "gpu-node-7" and its GPU, where rank 0 ran kernels and rank 1 none
    gpu = FakeGpu(utilisation=100, processes=[(11, 1 << 29), (12, 1 << 31)], samples=[(11, us(NOW - 1), 99)])
    reading = read_gpus(FakeNvml(gpus=[gpu]), wall_clock=lambda: NOW, host="gpu-node-7")
    snapshots = [snapshot(11, "rank 0", "spin", "gpu-node-7"), snapshot(12, "rank 1", "wait_for_peer", "gpu-node-7")]
    request = BundleRequest(
        logs=[str(DEMO)],
        cwd=tmp_path,
        as_of=datetime(2026, 4, 21, 9, 30),
        live=LiveStacks(snapshots=snapshots, gpus=reading),
        host="gpu-node-7",
    )
    # WHEN the bundle is assembled
    members = {member.name: member.data for member in collect(request, load_packs()).members}
    # THEN stacks.json holds the GPU, each process named by its rank, busy or idle; the host is redacted there too
    gpus = json.loads(members["stacks.json"])["gpus"]
    assert gpus["host"] != "gpu-node-7" and "gpu-node-7" not in members["stacks.json"].decode()
    (device,) = gpus["devices"]
    assert [(p["pid"], p["label"], p["busy"]) for p in device["processes"]] == [
        (11, "rank 0", True),
        (12, "rank 1", False),
    ]
