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
            "ran 30m01s against a 30m00s timeout (line 2)"
            "; no phase line or frame of a step places it: its lines prove dist_init reached, "
            "not the step it failed in",
        ),
        (
            FIXTURES / "real" / "gpu-h200x2" / "rank0.log",
            "rank 0 timed out during dist_init: collective ALLREDUCE #4 ran 30s against a 30s timeout (line 88)",
        ),
        (
            TORCH / "watchdog-terminate-then-fatal.log",
            "timed out: collective ALLREDUCE #4 of default_pg (rank 3 in the group) "
            "ran 10m00s against a 10m00s timeout (line 2)"
            "; no phase line or frame of a step places it: its lines prove dist_init reached, "
            "not the step it failed in",
        ),
    ],
    ids=["torch-2.2-tail", "real-h200x2-rank0", "torch-2.6-terminate-then-fatal"],
)
def test_a_collective_timeout_is_a_timeout_naming_the_collective(log: Path, reason: str) -> None:
    # GIVEN a log whose timeout shows first as C++ terminate output, or as the watchdog's own line
    # WHEN analysed post-mortem
    code, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a timeout (not a crash or an abort), and the reason names collective, number, group, rank; where no
    # phase line placed it, the reason says its watchdog proves only the process group (docs/design.md §4, item 6)
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


# One timeout as torch 2.5's watchdog says it (ref 2.3(a), (c), (e); ProcessGroupNCCL.cpp's watchdog loop logs the
# same work's `Timeout at NCCL work: <seq>` after `checkTimeout`'s `Watchdog caught … WorkNCCL(SeqNum=<seq>, …)`),
# as a paste cut above the `Watchdog caught` line keeps it: the status line first, the thread's exit quoting it last.
PREFIX = "[rank{rank}]:[E305 09:12:{s:02d}.000000000 ProcessGroupNCCL.cpp:{n}] "
PG = "[PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
CAUGHT = (
    "[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=64, "
    "NumelOut=64, Timeout(ms)=600000) ran for 600042 milliseconds before timing out."
)


def _status(rank: int, seq: int, s: int = 1) -> str:
    return (
        PREFIX.format(rank=rank, s=s, n=1834)
        + PG.format(rank=rank)
        + f"Timeout at NCCL work: {seq}, last enqueued NCCL work: {seq}, last completed NCCL work: {seq - 1}."
    )


def _caught(rank: int, seq: int, op: str, s: int = 1) -> str:
    return PREFIX.format(rank=rank, s=s, n=632) + CAUGHT.format(rank=rank, seq=seq, op=op)


def _terminated(rank: int, seq: int, op: str) -> str:
    return (
        PREFIX.format(rank=rank, s=2, n=1595)
        + PG.format(rank=rank)
        + "Process group watchdog thread terminated with exception: "
        + CAUGHT.format(rank=rank, seq=seq, op=op)
    )


def test_the_line_naming_the_collective_is_the_cause_of_its_timeout_whatever_comes_first(tmp_path: Path) -> None:
    # GIVEN rank 5's status line for work 7321, the tear-down, then the watchdog thread's exit naming that work
    log = tmp_path / "status-first.log"
    log.write_text(
        "\n".join(
            [
                _status(5, 7321),
                PREFIX.format(rank=5, s=1, n=630) + "[Rank 5] Some NCCL operations have failed or timed out. Due "
                "to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                "corrupted/incomplete data.",
                PREFIX.format(rank=5, s=1, n=636) + "[Rank 5] To avoid data inconsistency, we are taking the entire "
                "process down.",
                _terminated(5, 7321, "BROADCAST"),
            ]
        )
        + "\n"
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is the line that names the operation and its time (line 4), the reason names it, and the
    # status line's counters still place it (7320 completed: the steady state)
    assert (report["verdict"], report["root_cause"]["line"]) == ("timeout", 4)
    assert (
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7321, OpType=BROADCAST"
        in (report["root_cause"]["text"])
    )
    assert "collective BROADCAST #7321" in report["reason"]
    assert report["phase"] == "serving"


def test_another_ranks_line_names_the_work_a_status_line_only_numbers(tmp_path: Path) -> None:
    # GIVEN rank 0's status line for work 88 (its own `Watchdog caught` line not in the paste), then rank 2's
    # `Watchdog caught` line for the same work and rank 2's status line
    log = tmp_path / "two-ranks.log"
    log.write_text("\n".join([_status(0, 88), _caught(2, 88, "ALLREDUCE"), _status(2, 88)]) + "\n")
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the cause is rank 2's line (line 2): the only one naming the collective
    assert (report["verdict"], report["root_cause"]["line"]) == ("timeout", 2)
    assert "collective ALLREDUCE #88" in report["reason"]


def test_a_ranks_own_line_is_preferred_and_works_of_other_groups_are_not_taken(tmp_path: Path) -> None:
    # GIVEN rank 4's status line for its work 12, then work 12 named by two other ranks with different
    # operations (process groups number their works apart), then rank 4's own line naming its work 12
    lines = [_status(4, 12), _caught(1, 12, "ALLREDUCE"), _caught(3, 12, "BROADCAST")]
    log = tmp_path / "own.log"
    log.write_text("\n".join([*lines, _caught(4, 12, "_ALLGATHER_BASE", s=2)]) + "\n")
    lone = tmp_path / "ambiguous.log"
    lone.write_text("\n".join(lines) + "\n")
    # WHEN both logs are analysed post-mortem
    _, own = run_json("analyze", "--post-mortem", str(log))
    _, ambiguous = run_json("analyze", "--post-mortem", str(lone))
    # THEN rank 4's own line (line 4) is the cause of the first; in the second, where the other ranks' lines
    # disagree on the operation, the status line itself (line 1, the first in time) stays the cause
    assert (own["root_cause"]["line"], "collective _ALLGATHER_BASE #12" in own["reason"]) == (4, True)
    assert (ambiguous["verdict"], ambiguous["root_cause"]["line"]) == ("timeout", 1)


def test_a_communicator_aborted_by_its_own_timeout_is_a_timeout_before_the_agents_summary(tmp_path: Path) -> None:
    # GIVEN a worker's traceback cut above its frames, ending in torch's `NCCL communicator was aborted on rank 0.
    # Original reason for failure was: [Rank 0] Watchdog caught …` (ref 2.3(i)), then torchrun's agent lines in
    # logging's basic format (`WARNING:name:`, `ERROR:name:`), its `failed (exitcode: -6)` for the other worker
    log = tmp_path / "aborted.log"
    log.write_text(
        "\n".join(
            [
                '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 1322, '
                "in all_reduce",
                "    work = group.allreduce([tensor], opts)",
                "RuntimeError: NCCL communicator was aborted on rank 0.  Original reason for failure was: [Rank 0] "
                "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, "
                "Timeout(ms)=180000) ran for 180127 milliseconds before timing out.",
                "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4101 closing signal SIGTERM",
                "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 1 (pid: 4102) "
                "of binary: /opt/conda/bin/python",
            ]
        )
        + "\n"
    )
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a timeout whose cause is the aborted communicator's line quoting it (line 3), not the agent's summary
    assert (report["verdict"], report["root_cause"]["line"]) == ("timeout", 3)
    assert "collective ALLREDUCE #812" in report["reason"]
