"""`analyze --baseline`: where an earlier run stopped, ETA and budgets from successful runs of a setup."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from logphase.baselines.stats import BUDGET_FACTOR, percentile
from tests.baselines.sglang_logs import startup_log
from tests.conftest import FIXTURES, run_cli

HUNG = FIXTURES / "logs" / "sglang" / "eagle3-tp8-hung-cuda-graph-247.log"
RELAUNCH = FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log"
CAPTURES = (100, 110, 120)  # seconds of CUDA-graph capture in three successful runs


def _analyze_json(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_cli("analyze", *args, "--format", "json")
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_relaunch_is_past_the_point_where_the_earlier_run_hung(tmp_path: Path) -> None:
    # GIVEN a run that hung in CUDA-graph capture after 247 lines, and a relaunch of 392 lines in warmup
    # WHEN the relaunch is analysed against the hung log (a path: analysed on the fly)
    code, report = _analyze_json(
        "--post-mortem", "--db", str(tmp_path / "none.db"), str(RELAUNCH), "--baseline", str(HUNG)
    )
    baseline = report["baseline"]
    # THEN the line counts, the stop point and the milestone comparison are stated
    assert baseline["lines"] == {"this": 392, "baseline": 247}
    assert baseline["stop_point"] == {"phase": "cuda_graph", "line": 247, "milestone": "cuda_graph:end+draft_init"}
    assert (baseline["passed_stop_point"], baseline["outcome"], baseline["same_setup"]) == (True, "stalled", True)
    assert baseline["summary"].startswith(
        "392 lines vs 247 in the run that hung (stopped in cuda_graph at line 247): past its stall point"
    )
    # AND the table says it in words
    table = run_cli(
        "analyze", "--post-mortem", "--db", str(tmp_path / "none.db"), str(RELAUNCH), "--baseline", str(HUNG)
    )
    assert (
        "Baseline: 392 lines vs 247 in the run that hung (stopped in cuda_graph at line 247): past its stall point"
        in table.stdout
    )
    assert code == 4  # the relaunch itself ends mid-warmup: post-mortem that is stalled


def test_the_hung_run_against_itself_is_not_past_its_own_stall_point(tmp_path: Path) -> None:
    _, report = _analyze_json("--post-mortem", "--db", str(tmp_path / "none.db"), str(HUNG), "--baseline", str(HUNG))
    assert (report["baseline"]["passed_stop_point"], report["baseline"]["lines"]) == (
        False,
        {"this": 247, "baseline": 247},
    )
    assert "at its stall point (after cuda_graph, then in draft_init)" in report["baseline"]["summary"]


@pytest.fixture
def store_with_three_successes(tmp_path: Path) -> Path:
    """Three successful runs of one setup recorded, captures of 100, 110 and 120 s."""
    db = tmp_path / "runs.db"
    logs = []
    for day, capture in enumerate(CAPTURES, start=1):
        log = tmp_path / f"ok-{day}.log"
        log.write_text(startup_log(datetime(2026, 5, day, 10, 0, 0), capture))
        logs.append(str(log))
    result = run_cli("runs", "add", *logs, "--db", str(db), "--as-of", "2026-06-01 00:00:00")
    assert result.exit_code == 0
    return db


def test_run_at_60_percent_of_the_usual_capture_time_gets_an_eta_and_is_progressing(
    tmp_path: Path, store_with_three_successes: Path
) -> None:
    # GIVEN a new run of the same setup 66 s into capture (60 % of the median 110 s), last bar at 60 s
    log = tmp_path / "new.log"
    log.write_text(startup_log(datetime(2026, 5, 10, 10, 0, 0), 500, until_s=66))
    # WHEN it is analysed live against the recorded runs
    code, report = _analyze_json(
        "--live",
        "--as-of",
        "2026-05-10 10:02:26",
        "--db",
        str(store_with_three_successes),
        str(log),
        "--baseline",
        "auto",
    )
    baseline = report["baseline"]
    # THEN it is progressing, and the ETA is the median of (their capture + 22 s to ready) − 66 s
    assert (code, report["verdict"], report["phase"]) == (5, "progressing", "cuda_graph")
    assert (baseline["eta_s"], baseline["eta_range_s"], baseline["overdue"], baseline["runs"]) == (
        66.0,
        [58.0, 74.0],
        False,
        3,
    )
    # AND its silence is bounded by its own capture bar (it ticked every 10 s: 5 × 10 s, at least 2 min), which
    # outranks the budget learned from other runs (3 × p95 = 357 s): the bar is this run's evidence
    assert BUDGET_FACTOR * percentile(CAPTURES, 0.95) == 357.0
    assert report["budget_s"] == 120.0
    capture_row = next(row for row in baseline["phases"] if row["phase"] == "cuda_graph")
    assert capture_row == {"phase": "cuda_graph", "seconds": 66.0, "median": 110.0, "p90": 118.0, "runs": 3}
    assert (baseline["runs_used"], baseline["eta_rough"]) == (3, False)
    assert "successful runs spend 1m50s in cuda_graph; ready in ~1m06s (58s–1m14s), from 3 runs" in baseline["summary"]


def test_at_five_times_p90_without_progress_it_is_stalled_by_its_bar_with_or_without_runs(
    tmp_path: Path, store_with_three_successes: Path
) -> None:
    # GIVEN the same run, now 590 s (5 × p90 of 118 s) into capture, no progress since 60 s
    log = tmp_path / "new.log"
    log.write_text(startup_log(datetime(2026, 5, 10, 10, 0, 0), 500, until_s=66))
    as_of = "2026-05-10 10:11:10"
    code, report = _analyze_json(
        "--live", "--as-of", as_of, "--db", str(store_with_three_successes), str(log), "--baseline", "auto"
    )
    # THEN its capture bar, which ticked every 10 s, bounds the silence (5 × 10 s, at least 2 min): stalled
    assert (code, report["verdict"], report["silence_s"], report["budget_s"]) == (4, "stalled", 530.0, 120.0)
    assert report["reason"].startswith("the cuda_graph bar stopped at 6/51 (line ")
    # AND it is not overdue yet (5 × p90 is under 10 × p90), and what is left is the 22 s from capture to ready
    assert (report["baseline"]["overdue"], report["baseline"]["eta_s"]) == (False, 22.0)
    # AND without baselines the same bar says the same (before, the pack's 30 min kept it progressing)
    code, report = _analyze_json("--live", "--as-of", as_of, str(log))
    assert (code, report["verdict"], report["budget_s"]) == (4, "stalled", 120.0)


def test_baseline_by_run_id_uses_that_run_as_the_reference(tmp_path: Path, store_with_three_successes: Path) -> None:
    log = tmp_path / "new.log"
    log.write_text(startup_log(datetime(2026, 5, 10, 10, 0, 0), 500, until_s=66))
    _, report = _analyze_json(
        "--live", "--as-of", "2026-05-10 10:02:26", "--db", str(store_with_three_successes), str(log), "--baseline", "2"
    )
    baseline = report["baseline"]
    assert (baseline["run_id"], baseline["outcome"], baseline["lines"], baseline["passed_stop_point"]) == (
        2,
        "ready",
        {"this": 29, "baseline": 45},
        False,
    )
    assert baseline["summary"].startswith(
        "29 lines vs 45 in the run that was ready (ready at line 45): not there yet (this run is in cuda_graph)"
    )


def test_auto_without_recorded_runs_of_the_setup_says_so(tmp_path: Path) -> None:
    log = tmp_path / "new.log"
    log.write_text(startup_log(datetime(2026, 5, 10, 10, 0, 0), 100))
    db = tmp_path / "runs.db"
    assert run_cli("runs", "add", str(HUNG), "--db", str(db)).exit_code == 0  # another setup
    code, report = _analyze_json("--post-mortem", "--db", str(db), str(log), "--baseline", "auto")
    assert (code, report["baseline"]["outcome"], report["baseline"]["lines"]) == (
        0,
        None,
        {"this": 43, "baseline": None},
    )
    assert report["baseline"]["summary"] == "no earlier run of this setup (Qwen3-32B TP2) in the run store"


def test_bad_references_are_one_line_errors_with_hints(tmp_path: Path) -> None:
    log = tmp_path / "new.log"
    log.write_text(startup_log(datetime(2026, 5, 10, 10, 0, 0), 100))
    db = tmp_path / "runs.db"
    # an id without any store
    result = run_cli("analyze", str(log), "--db", str(db), "--baseline", "7")
    assert (result.exit_code, result.stderr.splitlines()[0]) == (3, f"logphase: error: no run store at {db}")
    assert "hint: record runs first" in result.stderr
    # an id that is not in the store
    run_cli("runs", "add", str(log), "--db", str(db))
    result = run_cli("analyze", str(log), "--db", str(db), "--baseline", "7")
    assert (result.exit_code, result.stderr.splitlines()[0]) == (3, f"logphase: error: no run 7 in {db}")
    # neither an id, nor auto, nor a file
    result = run_cli("analyze", str(log), "--db", str(db), "--baseline", "nothing-here.log")
    assert result.exit_code == 2
    assert (
        result.stderr.splitlines()[0]
        == "logphase: error: --baseline 'nothing-here.log': not a run id, 'auto' or an existing log"
    )
