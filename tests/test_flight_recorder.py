"""Torch flight-recorder dumps: read safely, judged per process group, and in `analyze`'s report."""

from __future__ import annotations

import gc
import gzip
import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from logphase import flight_recorder
from logphase.errors import InputError
from logphase.flight_recorder import MAX_ENTRIES, judge_dumps, parse_dump, read_dumps
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
    assert (group.pg, group.desc, tuple(group.ranks)) == ("0", "default_pg", (0, 1))
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


# --- hostile and large dumps ---------------------------------------------------------------------------


def _big_job_dump(groups: int, ranks: int, rank: int, enqueued: int) -> bytes:
    """A dump of a job with many process groups of many ranks: `pg_config` and `pg_status` come
    first and fill the first kilobytes, as torch writes them."""
    config = {str(g): {"name": str(g), "desc": f"pg{g}", "ranks": str(list(range(ranks)))} for g in range(groups)}
    status = {str(g): {"last_enqueued_collective": 3, "last_completed_collective": 3} for g in range(groups)}
    status["0"] = {"last_enqueued_collective": enqueued, "last_completed_collective": 3}
    entries = [entry(seq, [[4]], "completed" if seq <= 3 else "scheduled") for seq in range(1, enqueued + 1)]
    document = {"version": "2.10", "pg_config": config, "pg_status": status, "entries": entries}
    return pickle.dumps(document, protocol=2)


@pytest.mark.parametrize(("groups", "ranks"), [(5, 512), (60, 16)])
def test_dumps_of_large_jobs_are_recognised_by_analyze(tmp_path: Path, groups: int, ranks: int) -> None:
    # GIVEN the dumps of two ranks of a big job: rank 0 enqueued #4 of group 0, rank 1 never did
    paths = []
    for rank, enqueued in ((0, 4), (1, 3)):
        path = tmp_path / f"fr-rank-{rank}"
        path.write_bytes(_big_job_dump(groups, ranks, rank, enqueued))
        paths.append(str(path))
    assert b"entries" not in Path(paths[0]).read_bytes()[:8192]
    # WHEN analyze is given them with no log
    code, report = run_json("analyze", *paths)
    # THEN they are read as dumps, and rank 1 is the missing rank
    assert report["flight_recorder"]["missing_ranks"] == ["rank 1"]
    assert code == 6


def test_a_gzipped_dump_is_read(tmp_path: Path) -> None:
    # GIVEN the real two-GPU dumps, gzipped as they are often archived
    paths = []
    for name in ("fr-rank-0", "fr-rank-1"):
        path = tmp_path / f"{name}"
        path.write_bytes(gzip.compress((GPU2 / "fr" / name).read_bytes()))
        paths.append(str(path))
    # WHEN read THEN the finding is the one of the plain dumps
    assert judge_dumps(read_dumps(paths)).summary == SUMMARY


@pytest.mark.slow
def test_a_pickle_of_five_million_references_to_one_entry_stays_small() -> None:
    # GIVEN a 10 MB pickle whose `entries` list refers 5 million times to one memoised dict
    one = entry(1, [[4]])
    document = {"version": "2.10", "pg_config": {}, "pg_status": {}, "entries": [one] * 5_000_000}
    data = pickle.dumps(document, protocol=2)
    assert len(data) < 16 << 20
    # WHEN parsed THEN only the newest MAX_ENTRIES entries of its process group are judged
    dumped = parse_dump(data, "fr-rank-0")
    assert len(dumped.entries) == MAX_ENTRIES


NESTED = "placeholder for a list nested 100,000 deep"


@pytest.mark.parametrize(
    "bad_entry",
    [
        {**entry(1, [[4]]), "collective_seq_id": float("inf")},
        {**entry(1, [[4]]), "frames": [{"name": NESTED}]},
        {**entry(1, [[4]]), "input_sizes": [[float("nan")]]},
        {**entry(1, [[4]]), "process_group": "not a pair"},
        "not an entry at all",
    ],
    ids=["seq-inf", "name-nested-100k", "size-nan", "group-string", "entry-string"],
)
def test_fields_of_the_wrong_type_read_as_unknown(bad_entry: Any) -> None:
    # GIVEN a dump with one good entry and one entry whose field has a type torch never writes
    data = pickle.dumps({"version": "2.10", "pg_config": {}, "entries": [entry(2, [[4]]), bad_entry]}, protocol=2)
    # a list nested 100,000 deep cannot be pickled by Python itself: its opcodes are put in by hand
    nested = b"]" * 100_000 + b"a" * 99_999  # EMPTY_LIST x N, then APPEND each into the one below
    data = data.replace(b"X" + len(NESTED).to_bytes(4, "little") + NESTED.encode(), nested)
    # WHEN parsed THEN nothing raises, and the good entry is read as it is
    dumped = parse_dump(data, "fr-rank-0")
    assert dumped.entries[0].seq == 2


def test_a_dump_that_unpacks_past_the_bound_is_refused_with_the_buffer_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a dump of 5,000 distinct entries, and a bound of 20,000 objects (each entry is ~10)
    monkeypatch.setattr(flight_recorder, "MAX_OBJECTS", 20_000)
    data = dump(5000, 4999, [entry(seq, [[seq]]) for seq in range(1, 5001)])
    # WHEN read THEN refused: its size, the bound, and the hint naming the buffer torch records
    with pytest.raises(InputError) as caught:
        parse_dump(data, "fr-rank-0")
    size = f"{len(data) / (1 << 20):.1f}"
    assert caught.value.message == (
        f"fr-rank-0: {size} MB that unpacks to more than a flight-recorder dump is read to (20,000 objects, ~110 MB)"
    )
    assert "TORCH_FR_BUFFER_SIZE" in caught.value.hint and "TORCH_NCCL_TRACE_BUFFER_SIZE" in caught.value.hint
    # AND under the bound the same dump is read (the collector is left as it was)
    monkeypatch.setattr(flight_recorder, "MAX_OBJECTS", 200_000)
    assert len(parse_dump(data, "fr-rank-0").entries) == MAX_ENTRIES
    assert gc.isenabled()


def test_a_dump_over_the_byte_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a dump of 2 MB and a byte bound of 1 MB
    monkeypatch.setattr(flight_recorder, "MAX_DUMP_BYTES", 1 << 20)
    path = tmp_path / "fr-rank-0"
    path.write_bytes(dump(1, 0, [entry(1, [[4]])] * 3) + b"\0" * (2 << 20))
    # WHEN read THEN refused before unpickling, the hint naming the buffer
    with pytest.raises(InputError) as caught:
        read_dumps([str(path)])
    assert caught.value.message == f"{path}: over 1 MB, too big for a flight-recorder dump"
    assert "TORCH_FR_BUFFER_SIZE" in caught.value.hint
