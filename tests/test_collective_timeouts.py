"""Collective timeouts read as timeouts, whatever comes first, and the reason names the collective."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_json

TORCH = FIXTURES / "logs" / "torch"


@pytest.mark.parametrize(
    ("log", "reason"),
    [
        (
            TORCH / "watchdog-tail-terminate-only.log",
            "timed out: collective _ALLGATHER_BASE #73 (rank 6 in the group) "
            "ran 30m01s against a 30m00s timeout (line 2)",
        ),
        (
            FIXTURES / "real" / "gpu-h200x2" / "rank0.log",
            "rank 0 timed out during dist_init: collective ALLREDUCE #4 ran 30s against a 30s timeout (line 88)",
        ),
        (
            TORCH / "watchdog-terminate-then-fatal.log",
            "timed out: collective ALLREDUCE #4 of default_pg (rank 3 in the group) "
            "ran 10m00s against a 10m00s timeout (line 2)",
        ),
    ],
    ids=["torch-2.2-tail", "real-h200x2-rank0", "torch-2.6-terminate-then-fatal"],
)
def test_a_collective_timeout_is_a_timeout_naming_the_collective(log: Path, reason: str) -> None:
    # GIVEN a log whose timeout shows first as C++ terminate output, or as the watchdog's own line
    # WHEN analysed post-mortem
    code, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a timeout (not a crash or an abort), and the reason names collective, number, group, rank
    assert (report["verdict"], report["reason"], code) == ("timeout", reason, 4)
