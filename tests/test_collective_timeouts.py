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


# torch 2.3's per-group status after a timeout (ProcessGroupNCCL.cpp, ref 2.3(c)), alone in a paste
STATUS = (
    "[rank4]:[E114 15:08:00.554388780 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 4] Timeout at NCCL work: "
    "{seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {done}."
)


@pytest.mark.parametrize(
    ("seq", "done", "phase", "furthest"),
    [
        (175, 174, "serving", "serving"),
        (151721, 151720, "serving", "serving"),
        (1, 0, "dist_init", "dist_init"),
        (1, -1, "dist_init", "dist_init"),
        (9, 8, "launch", "dist_init"),
    ],
)
def test_a_lone_collective_timeout_takes_its_phase_from_its_counters(
    tmp_path: Path, seq: int, done: int, phase: str, furthest: str
) -> None:
    # GIVEN only the status line of a timed-out collective: `seq`, with `done` of the group's collectives completed
    log = tmp_path / "status.log"
    log.write_text(STATUS.format(seq=seq, done=done) + "\n")
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a timeout, placed by the counters: a hundred completed is the steady state, none the first
    # collective (the distributed init's); between, where it was is unknown (said as `launch`, no "during")
    assert (report["verdict"], report["phase"]) == ("timeout", phase)
    assert ("its collective counters" in report["reason"]) == (phase != "launch")
    # AND a process group timed out, so the run reached dist_init at least, whatever the counters say
    assert report["furthest_phase"] == furthest


def test_timeouts_in_two_process_groups_name_their_writers_and_blame_no_one(tmp_path: Path) -> None:
    # GIVEN global ranks 13 and 15 whose watchdogs report different collectives of sub-groups (torch 2.6: the
    # `[rankN]:` prefix is the global rank, the message's `[Rank 1]` the rank within the group)
    log = tmp_path / "groups.log"
    log.write_text(
        "[rank13]:[E218 04:54:22.864467604 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=216, OpType=ALLTOALL_BASE, NumelIn=1379328, NumelOut=1379328, Timeout(ms)=600000) "
        "ran for 600012 milliseconds before timing out.\n"
        "[rank15]:[E218 04:54:22.883327702 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=57, OpType=ALLREDUCE, NumelIn=32, NumelOut=32, Timeout(ms)=600000) ran for "
        "600047 milliseconds before timing out.\n"
    )
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a timeout reported by rank 13 (the writer, not the group's rank 1), and no culprit: the two
    # counters belong to different groups, and every rank shown is one that waited
    assert (report["verdict"], report["root_cause"]["rank"], report["culprit_ranks"]) == ("timeout", "rank 13", [])


# libnccl's error line (misc/socket.cc, ref 1.x) and a SGLang start-up that had reached weight_load before it
NCCL_ERROR = (
    "gpu-3:5121:5189 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<41379> failed : "
    "Software caused connection abort\n"
)
SGLANG_TO_WEIGHTS = (
    "[2025-03-08 12:29:01 TP0] Init torch distributed begin.\n"
    "[2025-03-08 12:29:05 TP0] Init torch distributed ends. mem usage=0.12 GB\n"
    "[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB\n"
)


@pytest.mark.parametrize(
    ("text", "furthest"),
    [(NCCL_ERROR, "dist_init"), (SGLANG_TO_WEIGHTS + NCCL_ERROR, "weight_load")],
    ids=["nccl-error-alone", "after-weight-load"],
)
def test_a_process_group_line_proves_dist_init_was_reached_and_never_lowers_the_phase(
    tmp_path: Path, text: str, furthest: str
) -> None:
    # GIVEN an NCCL error line (printed only once a communicator's init began), alone or after later phases
    log = tmp_path / "nccl.log"
    log.write_text(text)
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash, and the furthest phase is dist_init at least: the line proves it, the phase lines can say more
    assert (report["verdict"], report["furthest_phase"]) == ("crashed", furthest)
