"""NCCL's teardown INFO lines read as NCCL's and torch's source say they are printed (issue 25): the proxy service
thread's `[Service thread] Connection closed by localRank N` and `comm … - Abort COMPLETE` follow an abort or a
process's end, which a clean torch shutdown (2.3-2.5: `shutdown()` aborts) and a failure both cause; the failure,
where there is one, is another line's. Logs written from the formats (NVIDIA/nccl src/proxy.cc, src/init.cc;
shared/reference/nccl_torch_vllm.md §1.5, §1.7)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

_INIT = [
    "gpu7:{pid}:{pid} [{rank}] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "gpu7:{pid}:{pid} [{rank}] NCCL INFO ncclCommInitRank comm 0xa1b2c3{rank} rank {rank} nranks 2 cudaDev {rank} "
    "nvmlDev {rank} busId {bus}000 commId 0x5e1d0c3b2a190807 - Init START",
    "gpu7:{pid}:{pid} [{rank}] NCCL INFO ncclCommInitRank comm 0xa1b2c3{rank} rank {rank} nranks 2 cudaDev {rank} "
    "nvmlDev {rank} busId {bus}000 commId 0x5e1d0c3b2a190807 - Init COMPLETE",
]
# What ncclCommAbort prints on each rank while torch's shutdown aborts: each rank's proxy service thread sees the
# local ranks' sockets close without a Close message (src/proxy.cc), then the abort's own line (src/init.cc).
_ABORT_TEARDOWN = [
    "gpu7:{pid}:{tid} [{rank}] NCCL INFO [Service thread] Connection closed by localRank {rank}",
    "gpu7:{pid}:{tid} [{rank}] NCCL INFO [Service thread] Connection closed by localRank {other}",
    "gpu7:{pid}:{pid} [{rank}] NCCL INFO comm 0xa1b2c3{rank} rank {rank} nranks 2 cudaDev {rank} busId {bus}000 "
    "- Abort COMPLETE",
]
_RANKS = (
    {"rank": 0, "other": 1, "pid": 4100, "tid": 4180, "bus": 18},
    {"rank": 1, "other": 0, "pid": 4101, "tid": 4181, "bus": 2},
)


def _lines(templates: list[str]) -> list[str]:
    return [template.format(**rank) for rank in _RANKS for template in templates]


def test_an_abort_teardown_after_a_clean_init_changes_nothing_the_log_says_before_it(tmp_path: Path) -> None:
    # GIVEN two ranks that initialised their communicator, and the same log with each rank's abort teardown after it
    # (the proxy thread's `Connection closed by localRank` INFO lines and `- Abort COMPLETE`), no error anywhere
    before = _lines(_INIT)
    after = before + _lines(_ABORT_TEARDOWN)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # WHEN both are judged
    plain = judge_text(tmp_path / "a", "\n".join(before) + "\n", "job.log")
    torn_down = judge_text(tmp_path / "b", "\n".join(after) + "\n", "job.log")
    # THEN the teardown makes no failure: the verdict, phase and culprits are those of the log without it, and no
    # teardown line is named the cause
    assert torn_down["verdict"] == plain["verdict"]
    assert torn_down["verdict"] not in {"crashed", "aborted", "timeout"}
    assert torn_down["phase"] == plain["phase"] == "dist_init"
    assert torn_down["culprit_ranks"] == plain["culprit_ranks"] == []
    assert torn_down["root_cause"] is None or "Service thread" not in root_text(torn_down)
    assert torn_down["root_cause"] is None or "Abort COMPLETE" not in root_text(torn_down)


def test_a_watchdog_timeout_stays_the_cause_when_the_peers_proxy_threads_see_its_rank_leave(tmp_path: Path) -> None:
    # GIVEN rank 0's watchdog timing out on an ALLREDUCE (torch's ProcessGroupNCCL format), then both ranks' proxy
    # threads printing that local rank 0 closed its connection, and rank 0's communicator aborted
    watchdog = (
        "[rank0]:[E1203 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 "
        "milliseconds before timing out."
    )
    text = "\n".join(
        [
            *_lines(_INIT),
            watchdog,
            "gpu7:4101:4181 [1] NCCL INFO [Service thread] Connection closed by localRank 0",
            "gpu7:4100:4180 [0] NCCL INFO [Service thread] Connection closed by localRank 0",
            "gpu7:4100:4100 [0] NCCL INFO comm 0xa1b2c30 rank 0 nranks 2 cudaDev 0 busId 18000 - Abort COMPLETE",
        ]
    )
    # WHEN judged
    report = judge_text(tmp_path, text + "\n", "job.log")
    # THEN it is the watchdog's timeout, and its line is the cause
    assert report["verdict"] == "timeout"
    assert root_text(report) == watchdog


def test_the_proxy_threads_warn_of_a_failed_operation_is_still_a_failure(tmp_path: Path) -> None:
    # GIVEN two initialised ranks, then rank 1's proxy thread WARNing that progressing a Connect failed
    # (src/proxy.cc: `[Service thread] Error encountered progressing operation=%s, res=%d, closing connection`)
    warn = (
        "gpu7:4101:4181 [1] proxy.cc:1580 NCCL WARN [Service thread] Error encountered progressing "
        "operation=Connect, res=3, closing connection"
    )
    text = "\n".join([*_lines(_INIT), warn])
    # WHEN judged
    report = judge_text(tmp_path, text + "\n", "job.log")
    # THEN the run crashed on that line
    assert report["verdict"] == "crashed"
    assert root_text(report) == warn
