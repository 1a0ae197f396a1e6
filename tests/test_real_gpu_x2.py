"""Real two-H200 NCCL hang (fixtures/real/gpu-h200x2, issue 7): rank 1 skips an all_reduce, rank 0's watchdog fires."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_cli, run_json

GPU2 = FIXTURES / "real" / "gpu-h200x2"


def line_of(path: Path, number: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[number - 1]


@pytest.mark.parametrize("mode", ["--post-mortem", "--live"])
def test_hang_names_rank_1_from_both_logs(mode: str) -> None:
    # GIVEN both ranks' logs of the hang: rank 0 timed out in all_reduce #4, rank 1 never enqueued it
    paths = [str(GPU2 / "rank0.log"), str(GPU2 / "rank1.log")]
    # WHEN they are analysed together, as a finished log or as if still live
    code, report = run_json("analyze", mode, *paths)
    # THEN the verdict is the watchdog's timeout on rank 0, and rank 1 is the rank to look at
    assert (code, report["verdict"], report["culprit_ranks"]) == (4, "timeout", ["rank 1"])
    root = report["root_cause"]
    assert (root["path"], root["line"], root["rule"], root["rank"]) == (
        paths[0],
        88,
        "torch.watchdog.collective_timeout",
        "rank 0",
    )
    assert root["text"] == line_of(GPU2 / "rank0.log", 88)
    assert "WorkNCCL(SeqNum=4, OpType=ALLREDUCE" in root["text"]
    # AND the reason names first the rank that never arrived, then the one that reported (issue 26)
    assert report["reason"] == (
        "rank 1 did not arrive: rank 0 timed out during dist_init: collective ALLREDUCE #4 ran 30s against a 30s "
        "timeout (line 88)"
    )


def test_rank_1_alone_hears_of_rank_0s_timeout_and_has_nothing_in_flight() -> None:
    # GIVEN only rank 1's log: rank 0's dump signal reached it, its own counters are enqueued 3 / completed 3
    path = GPU2 / "rank1.log"
    # WHEN it is analysed
    code, report = run_json("analyze", "--post-mortem", str(path))
    # THEN the timeout is rank 0's, relayed (line 65, not the companion line 64), and rank 1 is not in any
    # collective while rank 0 waits in one: rank 1 is the culprit
    assert (code, report["verdict"], report["culprit_ranks"]) == (4, "timeout", ["rank 1"])
    assert (report["root_cause"]["line"], report["root_cause"]["rule"]) == (65, "torch.dump_signal.remote")
    assert report["reason"].startswith("rank 0 (reported by rank 1) timed out during dist_init: ")


def test_rank_0_alone_cannot_tell_who_is_missing() -> None:
    # GIVEN only rank 0's log WHEN analysed THEN the timeout is found, but nothing in it names another rank
    code, report = run_json("analyze", "--post-mortem", str(GPU2 / "rank0.log"))
    assert (code, report["verdict"], report["culprit_ranks"], report["root_cause"]["line"]) == (4, "timeout", [], 88)


@pytest.mark.parametrize("mode", ["--post-mortem", "--live"])
def test_success_run_finished(mode: str) -> None:
    # GIVEN the baseline run: 4 all_reduces, destroy_process_group, NCCL `Destroy COMPLETE` on both ranks
    paths = [str(GPU2 / "success-rank0.log"), str(GPU2 / "success-rank1.log")]
    # WHEN it is analysed
    code, report = run_json("analyze", mode, *paths)
    # THEN the job finished (not stalled: a job has no `ready` line), with no culprit and no root cause
    assert (code, report["verdict"], report["phase"], report["culprit_ranks"]) == (0, "finished", "dist_init", [])
    assert (report["root_cause"], report["system"]) == (None, "torch")  # NCCL lines alone imply a torch job
    assert report["reason"] == (
        "the job finished: every rank shut down cleanly (the last: rank 0, line 90, "
        "comm 0x151c46c0 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE)"
    )


def test_one_rank_of_the_success_run_did_not_finish_the_job(tmp_path: Path) -> None:
    # GIVEN the success run's rank 1 log cut before its teardown (its first 62 lines)
    lines = (GPU2 / "success-rank1.log").read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "success-rank1.log"
    cut.write_text("".join(lines[:62]), encoding="utf-8")
    assert "Destroy COMPLETE" not in cut.read_text(encoding="utf-8")
    # WHEN analysed with rank 0's complete log
    code, report = run_json("analyze", "--post-mortem", str(GPU2 / "success-rank0.log"), str(cut))
    # THEN not every rank exited: the job did not finish
    assert (code, report["verdict"]) == (4, "stalled")


def test_hang_against_the_success_baseline() -> None:
    # GIVEN the success run as the baseline of the hang
    code, report = run_json(
        "analyze",
        "--post-mortem",
        str(GPU2 / "rank0.log"),
        str(GPU2 / "rank1.log"),
        "--baseline",
        str(GPU2 / "success-rank0.log"),
    )
    baseline = report["baseline"]
    # THEN the baseline is a finished run, and this one did not get as far
    assert (code, baseline["outcome"], baseline["passed_stop_point"]) == (4, "finished", False)
    assert baseline["lines"] == {"this": 200, "baseline": 92}
    assert baseline["summary"] == (
        "200 lines vs 92 in the run that finished (done at line 92): timeout in dist_init, a phase that run got through"
    )


def test_recorded_success_run_is_the_same_setup_as_the_hang(tmp_path: Path) -> None:
    # GIVEN the success run recorded (its logs hold only NCCL lines: no torch line names the system)
    db = str(tmp_path / "runs.db")
    for name in ("success-rank0.log", "success-rank1.log"):
        assert run_cli("runs", "add", "--db", db, str(GPU2 / name)).exit_code == 0
    # WHEN the hang (torch's watchdog lines in it) is compared with `--baseline auto`
    code, report = run_json(
        "analyze", "--post-mortem", "--db", db, str(GPU2 / "rank0.log"), str(GPU2 / "rank1.log"), "--baseline", "auto"
    )
    # THEN both are torch jobs of one setup: the finished runs are its reference and pool
    assert (code, report["system"], report["baseline"]["outcome"]) == (4, "torch", "finished")
    assert report["baseline"]["phases"][0]["runs"] == 2


DUMPS = {"json": ".json", "txt": ".txt", "native": "-native.txt"}
FRAMES = {
    "json": "synchronize (torch/cuda/__init__.py:1162)",
    "txt": "synchronize (torch/cuda/__init__.py:1162)",
    "native": "cudaDeviceSynchronize (libcudart.so.13)",
}


@pytest.mark.parametrize("kind", DUMPS)
def test_stacks_of_both_ranks(kind: str) -> None:
    # GIVEN py-spy dumps of both ranks 10 s into the hang, saved as pyspy-rank0 / pyspy-rank1
    args = [arg for rank in (0, 1) for arg in ("--from", str(GPU2 / f"pyspy-rank{rank}{DUMPS[kind]}"))]
    # WHEN logphase merges them
    code, report = run_json("stacks", *args)
    # THEN rank 0 waits for the GPU (the all_reduce it enqueued never completes: NCCL is asynchronous,
    # so the collective shows as torch.cuda.synchronize), rank 1 is elsewhere and is the odd rank
    assert code == 4
    groups = [(g["ranks"], g["state"]) for g in report["groups"]]
    assert groups == [(["rank 0"], "gpu_sync"), (["rank 1"], "unknown")]
    assert report["culprit_ranks"] == ["rank 1"]
    rank0 = report["groups"][0]["frames"]
    assert FRAMES[kind] in rank0
    stall = report["stall"]
    assert (stall["ranks"], stall["frame"]) == (["rank 1"], "skip_collective_and_sleep (nccl_hang_capture.py:224)")
    assert stall["summary"].endswith("rank 1 is behind")


def test_capture_is_what_the_readme_says() -> None:
    # GIVEN the run's summary and versions WHEN read THEN both runs are ok, every listed file exists,
    # and the README names the versions
    summary = json.loads((GPU2 / "summary.json").read_text(encoding="utf-8"))
    versions = json.loads((GPU2 / "versions.json").read_text(encoding="utf-8"))
    assert summary["counts"] == {"ok": 2, "partial": 0, "failed": 0, "skipped": 0}
    assert all((GPU2 / f).is_file() for c in summary["captures"] for f in c["files"])
    assert (versions["gpu_count"], versions["gpu_name"], versions["p2p_0_1"]) == (2, "NVIDIA H200", True)
    readme = (GPU2 / "README.md").read_text(encoding="utf-8")
    for key in ("torch", "nccl", "driver", "python", "py_spy"):
        assert f"`{versions[key]}`" in readme, key
