"""torch_npu's ProcessGroupHCCL watchdog says a collective timeout in torch's words with its own work (stop 45, kind D2:
a timeout read as a crash): libtorch_npu.so of torch-npu 2.5.1 holds `Watchdog caught collective operation timeout: `,
`WorkHCCL(`, `SeqNum=`, `, OpType=`, `, Timeout(ms)=`, ` ran for `, ` milliseconds before timing out.`, `Some HCCL
operations have failed or timed out. Due to the `, `] HCCL watchdog thread terminated with exception: `: the lines of
ProcessGroupNCCL's watchdog (ref 2.3) with HCCL for NCCL. A timeout, judged as NCCL's is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    _, report = run_json("analyze", "--post-mortem", str(log))
    return report


def _watchdog(rank: int, seq: int, ran_ms: int, stamp: str) -> list[str]:
    work = f"WorkHCCL(SeqNum={seq}, OpType=ALLGATHER, Timeout(ms)=1800000) ran for {ran_ms} milliseconds"
    work += " before timing out."
    caught = f"[Rank {rank}] Watchdog caught collective operation timeout: {work}"
    return [
        f"[rank{rank}]:[E1105 {stamp}.118204731 compiler_depend.ts:574] {caught}",
        f"[rank{rank}]:[E1105 {stamp}.118291020 compiler_depend.ts:628] Some HCCL operations have failed or timed out."
        " Due to the asynchronous nature of ASCEND kernels, subsequent NPU operations might run on corrupted/incomplete"
        " data.",
        f"[rank{rank}]:[E1105 {stamp}.118302144 compiler_depend.ts:634] To avoid data inconsistency, we are taking the"
        " entire process down.",
        f"[rank{rank}]:[E1105 {stamp}.119530112 compiler_depend.ts:1020] [Rank {rank}] HCCL watchdog thread terminated"
        f" with exception: {caught}",
        "terminate called after throwing an instance of 'std::runtime_error'",
        f"  what():  [Rank {rank}] HCCL watchdog thread terminated with exception: {caught}",
    ]


def test_an_hccl_watchdog_timeout_is_a_timeout_caused_at_its_caught_line(tmp_path: Path) -> None:
    # GIVEN two ranks' HCCL watchdogs timing out on the same early collective, each taking its process down
    lines = _watchdog(1, 42, 1800412, "08:14:02") + _watchdog(0, 42, 1800993, "08:14:02")
    # WHEN analysed
    report = _analyze(tmp_path, lines)
    # THEN a timeout after the process group was up (its furthest phase: no line places the run further, as for
    # NCCL's), the first `Watchdog caught` line the cause, and no rank singled out: both timed out alike
    assert (report["verdict"], report["furthest_phase"]) == ("timeout", "dist_init")
    assert report["root_cause"]["line"] == 1
    assert report["culprit_ranks"] == []


def test_an_hccl_watchdog_timeout_past_a_hundred_collectives_was_in_the_steps(tmp_path: Path) -> None:
    # GIVEN the same timeout on a group that completed hundreds of collectives (fixtures/realworld/README.md: serving)
    report = _analyze(tmp_path, _watchdog(3, 4211, 1800085, "08:14:02"))
    # THEN a timeout during serving, as NCCL's counters place it
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("timeout", "serving", "serving")


def test_a_pasted_terminate_alone_of_an_hccl_watchdog_timeout_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN only std::terminate's two lines, the what() quoting the HCCL watchdog's caught timeout
    report = _analyze(tmp_path, _watchdog(2, 7, 600321, "08:14:02")[-2:])
    # THEN a timeout, the what() line its cause
    assert report["verdict"] == "timeout"
    assert report["root_cause"]["line"] == 2
