"""Torch flight-recorder dumps: read safely, judged per process group, and in `analyze`'s report."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from logphase.errors import InputError
from logphase.flight_recorder import judge_dumps, parse_dump, read_dumps
from tests.conftest import FIXTURES, run_json

GPU2 = FIXTURES / "real" / "gpu-h200x2"
DUMPS = [str(GPU2 / "fr" / "fr-rank-0"), str(GPU2 / "fr" / "fr-rank-1")]
SUMMARY = (
    "collective #4 nccl:all_reduce of default_pg: enqueued by rank 0 (scheduled); "
    "rank 1 never enqueued it (last: #3): the missing rank"
)


def test_the_real_two_gpu_hang_names_rank_1() -> None:
    # GIVEN both ranks' dumps of the NCCL hang (rank 1 skipped all_reduce #4)
    # WHEN they are read and judged
    report = judge_dumps(read_dumps(DUMPS))
    # THEN collective #4 is pending on rank 0 and rank 1 never enqueued it
    (group,) = report.groups
    assert (group.pg, group.desc, group.ranks) == ("0", "default_pg", (0, 1))
    assert (dict(group.enqueued), dict(group.completed)) == ({"rank 0": 4, "rank 1": 3}, {"rank 0": 3, "rank 1": 3})
    assert group.pending is not None
    assert (group.pending.seq, group.pending.op, group.pending.state) == (4, "nccl:all_reduce", "scheduled")
    assert group.pending.frames[:3] == (
        "all_reduce (torch/distributed/distributed_c10d.py:3068)",
        "wrapper (torch/distributed/c10d_logger.py:83)",
        "run_step (nccl_hang_capture.py:213)",
    )
    assert (report.missing, group.mismatched, group.without_dump, report.summary) == (("rank 1",), (), (), SUMMARY)


def test_a_world_of_one_has_no_missing_rank() -> None:
    # GIVEN the 1-GPU watchdog timeout's dump (a collective stuck behind spin kernels, nobody missing)
    report = judge_dumps(read_dumps([str(FIXTURES / "real" / "gpu-h200" / "nccl-watchdog-timeout-fr-rank-0")]))
    # THEN the pending collective is named, and no rank is missing from it
    assert report.summary == "collective #2 nccl:all_reduce of default_pg: enqueued by rank 0 (scheduled)"
    assert report.missing == ()


def entry(seq: int, sizes: list[list[int]], state: str = "completed", op: str = "nccl:all_reduce") -> dict[str, Any]:
    return {
        "collective_seq_id": seq,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "profiling_name": op,
        "state": state,
        "input_sizes": sizes,
        "frames": [{"name": "step", "filename": "/job/train.py", "line": 7}],
        "is_p2p": False,
    }


def dump(enqueued: int, completed: int, entries: list[dict[str, Any]]) -> bytes:
    return pickle.dumps(
        {
            "version": "2.10",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}},
            "pg_status": {"0": {"last_enqueued_collective": enqueued, "last_completed_collective": completed}},
            "entries": entries,
        },
        protocol=2,
    )


def test_mismatched_sizes_and_ranks_without_a_dump_are_named() -> None:
    # GIVEN ranks 0 and 1 of a 3-rank group, both at all_reduce #2, with different sizes; no dump of rank 2
    rank0 = parse_dump(dump(2, 1, [entry(1, [[4]]), entry(2, [[8]], "started")]), "trace_rank_0")
    rank1 = parse_dump(dump(2, 1, [entry(1, [[4]]), entry(2, [[16]], "started")]), "trace_rank_1")
    # WHEN judged
    (group,) = judge_dumps([rank0, rank1]).groups
    # THEN nobody is missing, rank 1 enqueued other sizes, and rank 2's dump is missing
    assert (group.missing, group.mismatched, group.without_dump) == ((), ("rank 1",), ("rank 2",))
    assert group.summary() == (
        "collective #2 nccl:all_reduce of default_pg: enqueued by rank 0, rank 1 (started); "
        "rank 1 enqueued another op or other sizes as #2; no dump of rank 2"
    )


def test_dumps_without_pg_status_are_judged_from_their_entries() -> None:
    # GIVEN dumps of an older torch (no `pg_status`): rank 0 has #3 scheduled, rank 1 stopped at #2
    def old(entries: list[dict[str, Any]]) -> bytes:
        return pickle.dumps({"version": "2.2", "pg_config": {}, "entries": entries}, protocol=2)

    rank0 = parse_dump(old([entry(2, [[4]]), entry(3, [[4]], "scheduled")]), "nccl_trace_rank_0")
    rank1 = parse_dump(old([entry(2, [[4]])]), "nccl_trace_rank_1")
    # WHEN judged THEN the counters come from the entries, and rank 1 is missing from #3
    report = judge_dumps([rank0, rank1])
    assert (rank0.status, rank1.status, report.missing) == ({"0": (3, 2)}, {"0": (2, 2)}, ("rank 1",))


def test_a_pickle_that_asks_for_code_is_refused_and_not_run(tmp_path: Path) -> None:
    # GIVEN a "dump" whose pickle calls a function when loaded
    marker = tmp_path / "ran"
    payload = pickle.dumps({"pg_config": {}, "entries": [], "x": _Calls(str(marker))}, protocol=2)
    # WHEN it is parsed THEN it is refused, and the call never happened
    with pytest.raises(InputError, match="not a readable flight-recorder dump: it asks for"):
        parse_dump(payload, "evil-rank-0")
    assert not marker.exists()


class _Calls:
    """Unpickles into a call of os.mkdir(path): what a crafted pickle could do."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.mkdir, (self.path,))


def test_a_truncated_dump_is_an_error_with_a_hint() -> None:
    data = (GPU2 / "fr" / "fr-rank-0").read_bytes()
    with pytest.raises(InputError) as caught:
        parse_dump(data[: len(data) // 2], "fr-rank-0")
    assert caught.value.message.startswith("fr-rank-0: not a readable flight-recorder dump")
    assert "whole" in caught.value.hint


@pytest.mark.parametrize(
    ("logs", "culprits", "notes"),
    [
        (["rank0.log", "rank1.log"], ["rank 1"], []),
        (["rank0.log"], ["rank 1"], ["culprit ranks from the flight recorder: rank 1"]),
    ],
)
def test_analyze_reads_dumps_with_the_logs(logs: list[str], culprits: list[str], notes: list[str]) -> None:
    # GIVEN the hang's logs (both, or rank 0's alone) and both flight-recorder dumps
    # WHEN analysed together
    code, report = run_json("analyze", "--post-mortem", *[str(GPU2 / name) for name in logs], *DUMPS)
    # THEN the logs give the verdict; the dumps name rank 1 (alone: they are what names it)
    assert (code, report["verdict"], report["culprit_ranks"], report["notes"]) == (4, "timeout", culprits, notes)
    assert [i["path"] for i in report["inputs"]] == [str(GPU2 / name) for name in logs]
    assert report["flight_recorder"]["summary"] == SUMMARY
    assert report["flight_recorder"]["missing_ranks"] == ["rank 1"]


def test_analyze_of_dumps_alone() -> None:
    # GIVEN only the dumps WHEN analysed THEN no log verdict, but the missing rank is named
    code, report = run_json("analyze", *DUMPS)
    assert (code, report["verdict"], report["reason"]) == (6, "unknown", "no log given; see the flight recorder")
    assert report["culprit_ranks"] == ["rank 1"]
