"""Real H200 captures (fixtures/real/gpu-h200, issue 6): verdict, phase, root-cause line and stall state."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_json

GPU = FIXTURES / "real" / "gpu-h200"


def line_of(path: Path, number: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[number - 1]


@dataclass(frozen=True)
class LogCase:
    files: tuple[str, ...]
    exit_code: int
    verdict: str
    phase: str | None
    root_file: str | None  # the file the root-cause line is in
    root_line: int | None
    root_rule: str | None
    root_rank: str | None
    needle: str | None  # a fragment the root-cause line must contain

    @property
    def id(self) -> str:
        return "+".join(Path(f).stem for f in self.files)


def crash(
    file: str, line: int, rule: str, needle: str, *, verdict: str = "crashed", rank: str | None = None
) -> LogCase:
    # a program that failed was launched: its failure lines alone place it in `launch` at least
    return LogCase((file,), 4, verdict, "launch", file, line, rule, rank, needle)


LOG_CASES = [
    crash("cuda-oom.log", 20, "cuda.oom.out_of_memory", "CUDA out of memory. Tried to allocate 4.00 GiB."),
    crash("cuda-oom-huge-request.log", 12, "cuda.oom.out_of_memory", "Tried to allocate 209.70 GiB."),
    # the kernel's printf lands before the traceback here: the first assertion is the root
    crash("device-assert.log", 1, "cuda.device_assert.kernel", '"index out of bounds"` failed.'),
    crash(
        "device-assert-embedding.log", 1, "cuda.device_assert.kernel", "Assertion `srcIndex < srcSelectDimSize` failed."
    ),
    crash("illegal-memory-access.log", 15, "cuda.illegal_memory_access", "an illegal memory access was encountered"),
    crash(
        "faulthandler-sigabrt.log",
        2,
        "python.faulthandler.fatal_error",
        "Fatal Python error: Aborted",
        verdict="aborted",
    ),
    # rank 1 only sees rank 0's socket close: a consequence, but the only failure in its log
    crash("gloo-hang-rank1.log", 18, "torch.gloo.peer_closed", "Connection closed by peer", rank="rank 1"),
    pytest.param(
        crash(
            "gloo-hang-rank0.log",
            18,
            "torch.gloo.timeout",
            "Timed out waiting 20000ms for recv",
            verdict="timeout",
            rank="rank 0",
        ),
        id="gloo-hang-rank0",
    ),
    pytest.param(
        LogCase(
            ("gloo-hang-rank0.log", "gloo-hang-rank1.log"),
            4,
            "timeout",
            "launch",
            "gloo-hang-rank0.log",
            18,
            "torch.gloo.timeout",
            "rank 0",
            "Timed out waiting 20000ms for recv",
        ),
        id="gloo-hang-both-ranks",
    ),
    # torch 2.11 watchdog: communicator init completed (dist_init is the last phase an NCCL-only log shows)
    LogCase(
        ("nccl-watchdog-timeout.log",),
        4,
        "timeout",
        "dist_init",
        "nccl-watchdog-timeout.log",
        98,
        "torch.watchdog.collective_timeout",
        "rank 0",
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE",
    ),
    # a clean NCCL run never says `ready`, but its rank destroyed its communicator with no error: the job finished
    LogCase(("nccl-info-allreduce.log",), 0, "finished", "dist_init", None, None, None, None, None),
    LogCase(("nccl-info-subsys-all-allreduce.log",), 0, "finished", "dist_init", None, None, None, None, None),
    # the capture script's own progress log names exceptions in prose: nothing in it is a failure
    LogCase(("capture-run.log",), 6, "unknown", None, None, None, None, None, None),
    LogCase(("pyspy-synchronize-target.log",), 6, "unknown", None, None, None, None, None, None),
    LogCase(("pyspy-cuda-graph-capture-target.log",), 6, "unknown", None, None, None, None, None, None),
]


def _case_id(case: Any) -> str:
    return case.id if isinstance(case, LogCase) else str(case)


@pytest.mark.parametrize("case", LOG_CASES, ids=_case_id)
def test_analyze_real_capture(case: LogCase) -> None:
    # GIVEN a log a real program printed on an H200
    paths = [str(GPU / name) for name in case.files]
    # WHEN logphase analyzes it as a finished log
    code, report = run_json("analyze", "--post-mortem", *paths)
    # THEN verdict, phase and the root-cause line are the ones a reader of the file picks
    assert (code, report["verdict"], report["phase"]) == (case.exit_code, case.verdict, case.phase)
    root = report["root_cause"]
    if case.root_line is None:
        assert root is None
        return
    assert case.root_file is not None and case.needle is not None
    root_path = GPU / case.root_file
    assert (root["path"], root["line"], root["rule"], root["rank"]) == (
        str(root_path),
        case.root_line,
        case.root_rule,
        case.root_rank,
    )
    assert root["text"] == line_of(root_path, case.root_line)
    assert case.needle in root["text"]


def test_every_real_log_has_a_case() -> None:
    # GIVEN the capture folder WHEN its logs are listed THEN each one is analysed by a case above
    covered = {name for case in LOG_CASES for name in _files(case)}
    assert {p.name for p in GPU.glob("*.log")} == covered


def _files(case: Any) -> tuple[str, ...]:
    inner = case if isinstance(case, LogCase) else case.values[0]
    return tuple(inner.files)


@pytest.mark.parametrize(
    ("name", "main_end", "rank_span"),
    [
        ("nccl-info-allreduce.log", 92, (14, 94)),
        ("nccl-info-subsys-all-allreduce.log", 523, (27, 525)),
    ],
)
def test_nccl_teardown_is_not_dist_init(name: str, main_end: int, rank_span: tuple[int, int]) -> None:
    # GIVEN a clean NCCL 2.28 run that ends with Destroy COMPLETE, RAS/proxy exit and the env plugin closing
    # WHEN it is analysed
    _, report = run_json("analyze", "--post-mortem", str(GPU / name))
    spans = {span["rank"]: (span["start_line"], span["end_line"]) for span in report["phases"]}
    # THEN dist_init ends where setup ends, not at the teardown lines
    assert [span["phase"] for span in report["phases"]] == ["dist_init", "dist_init"]
    assert spans["rank 0"] == rank_span
    assert spans[None][1] == main_end
    # ... and the last teardown line is still the log's last line
    last = GPU.joinpath(name).read_text(encoding="utf-8").splitlines()
    assert report["last_line"]["line"] == len(last)
    assert "Closing env plugin" in report["last_line"]["text"]


@dataclass(frozen=True)
class StackCase:
    files: tuple[str, ...]
    exit_code: int
    groups: tuple[tuple[str, str], ...]  # (rank, state) per group, in report order
    culprits: tuple[str, ...]
    stall_state: str | None
    stall_ranks: tuple[str, ...]
    stall_frame: str | None


def stack(files: tuple[str, ...], groups: tuple[tuple[str, str], ...], **kw: Any) -> StackCase:
    return StackCase(
        files,
        kw.get("exit_code", 4),
        groups,
        kw.get("culprits", ()),
        kw.get("state"),
        kw.get("ranks", ()),
        kw.get("frame"),
    )


SYNC = (("pid 545", "gpu_sync"),)
GLOO0 = (("rank 0", "collective_wait"),)
GLOO_BOTH = (("rank 0", "collective_wait"), ("rank 1", "unknown"))
STACK_CASES = {
    # the main thread blocked in torch.cuda.synchronize() behind spin kernels
    "synchronize-json": stack(
        ("pyspy-synchronize.json",),
        SYNC,
        state="gpu_sync",
        ranks=("pid 545",),
        frame="synchronize (torch/cuda/__init__.py:1162)",
    ),
    "synchronize-txt": stack(
        ("pyspy-synchronize.txt",),
        SYNC,
        state="gpu_sync",
        ranks=("pid 545",),
        frame="synchronize (torch/cuda/__init__.py:1162)",
    ),
    "synchronize-native": stack(
        ("pyspy-synchronize-native.txt",),
        SYNC,
        state="gpu_sync",
        ranks=("pid 545",),
        frame="cudaDeviceSynchronize (libcudart.so.13)",
    ),
    # the same process killed by SIGABRT: faulthandler's dump, current thread in synchronize
    "faulthandler-sigabrt": stack(
        ("faulthandler-sigabrt.log",),
        (("process #1", "crashed"),),
        culprits=("process #1",),
        state="crashed",
        ranks=("process #1",),
        frame="synchronize (torch/cuda/__init__.py:1162)",
    ),
    # gloo rank 0 waits in all_reduce for rank 1, which sleeps in load_next_batch
    "gloo-rank0-json": stack(
        ("gloo-hang-pyspy-rank0.json",),
        GLOO0,
        state="collective_wait",
        ranks=("rank 0",),
        frame="all_reduce (torch/distributed/distributed_c10d.py:3075)",
    ),
    "gloo-rank0-txt": stack(
        ("gloo-hang-pyspy-rank0.txt",),
        GLOO0,
        state="collective_wait",
        ranks=("rank 0",),
        frame="all_reduce (torch/distributed/distributed_c10d.py:3075)",
    ),
    "gloo-rank0-native": stack(
        ("gloo-hang-pyspy-rank0-native.txt",),
        GLOO0,
        state="collective_wait",
        ranks=("rank 0",),
        frame="c10d::Work::wait (libtorch_cpu.so)",
    ),
    "gloo-rank1-json": stack(("gloo-hang-pyspy-rank1.json",), (("rank 1", "unknown"),), exit_code=0),
    "gloo-rank1-txt": stack(("gloo-hang-pyspy-rank1.txt",), (("rank 1", "unknown"),), exit_code=0),
    "gloo-rank1-native": stack(("gloo-hang-pyspy-rank1-native.txt",), (("rank 1", "unknown"),), exit_code=0),
    **{
        f"gloo-both-{kind}": stack(
            (f"gloo-hang-pyspy-rank0{suffix}", f"gloo-hang-pyspy-rank1{suffix}"),
            GLOO_BOTH,
            culprits=("rank 1",),
            state="unknown",
            ranks=("rank 1",),
            frame="load_next_batch (gpu_capture.py:363)",
        )
        for kind, suffix in (("json", ".json"), ("txt", ".txt"), ("native", "-native.txt"))
    },
    # plain tracebacks are not stack dumps: nothing to read
    "gloo-rank0-log": stack(("gloo-hang-rank0.log",), (), exit_code=3),
    "gloo-rank1-log": stack(("gloo-hang-rank1.log",), (), exit_code=3),
}


@pytest.mark.parametrize("case", STACK_CASES.values(), ids=STACK_CASES.keys())
def test_stacks_from_real_dump(case: StackCase) -> None:
    # GIVEN py-spy / faulthandler output of real processes (a dump names no rank: the file name
    # `...-rank1.json` does, else the pid does)
    args = [arg for name in case.files for arg in ("--from", str(GPU / name))]
    # WHEN logphase reads the dumps
    code, report = run_json("stacks", *args)
    # THEN each group is in the wait state the process really was in, and the odd rank is named
    assert code == case.exit_code
    assert tuple((", ".join(g["ranks"]), g["state"]) for g in report["groups"]) == case.groups
    assert tuple(report["culprit_ranks"]) == case.culprits
    stall = report["stall"]
    if case.stall_state is None:
        assert stall is None
        return
    assert (stall["state"], tuple(stall["ranks"]), stall["frame"]) == (
        case.stall_state,
        case.stall_ranks,
        case.stall_frame,
    )


@pytest.mark.parametrize(
    "name", ["pyspy-cuda-graph-capture.json", "pyspy-cuda-graph-capture.txt", "pyspy-cuda-graph-capture-native.txt"]
)
def test_stacks_inside_cuda_graph_capture(name: str) -> None:
    # GIVEN a process parked inside `with torch.cuda.graph(g):` (capture_one_batch_size -> run_once)
    # WHEN logphase reads its dump
    _, report = run_json("stacks", "--from", str(GPU / name))
    # THEN it is capturing CUDA graphs
    assert [(g["ranks"], g["state"]) for g in report["groups"]] == [(["pid 596"], "cuda_graph")]


def test_captures_are_what_the_readme_says() -> None:
    # GIVEN the run's summary and versions WHEN read THEN every capture is ok and every listed file exists
    summary = json.loads((GPU / "summary.json").read_text(encoding="utf-8"))
    versions = json.loads((GPU / "versions.json").read_text(encoding="utf-8"))
    assert summary["counts"] == {"ok": 12, "partial": 0, "failed": 0, "skipped": 0}
    assert all((GPU / f).is_file() for c in summary["captures"] for f in c["files"])
    readme = (FIXTURES / "real" / "README.md").read_text(encoding="utf-8")
    for key in ("torch", "nccl", "driver", "python", "py_spy", "torch_cuda"):
        assert f"`{versions[key]}`" in readme, key
