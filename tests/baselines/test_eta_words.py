"""The ETA's trust and the overdue tests, in figures and words, on runs made by hand (exact times)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from logphase.baselines.compare import Comparison, compare
from logphase.baselines.fingerprint import Fingerprint
from logphase.baselines.records import PhaseRecord, RunRecord, StopPoint
from logphase.baselines.stats import remaining_in
from logphase.phases import Phase, Verdict

TP4 = Fingerprint(system="sglang", version="0.5.2", model_path="Qwen/Qwen3-32B", tp_size=4)
TP8 = replace(TP4, tp_size=8)


def _ready_run(capture_s: float, *, number: int, fingerprint: Fingerprint = TP4) -> RunRecord:
    """Weights 0–80 s, CUDA-graph capture from 80 s for `capture_s`, ready 20 s after the capture."""
    ready = 80.0 + capture_s + 20.0
    return RunRecord(
        fingerprint=fingerprint,
        verdict=Verdict.READY,
        phases=(
            PhaseRecord(Phase.WEIGHT_LOAD, 0.0, 80.0, 1, 10, True),
            PhaseRecord(Phase.CUDA_GRAPH, 80.0, capture_s, 11, 20, True),
            PhaseRecord(Phase.READY, ready, None, 30, 30, False),
        ),
        lines=30,
        stop=StopPoint(Phase.READY, False, 30),
        last_text="The server is fired up and ready to roll!",
        paths=(f"{number}.log",),
        content_hash=f"{number:064d}",
        head_hash="ab" * 32,
        started=datetime(2026, 5, number, 10, 0, 0),
        ready_s=ready,
        id=number,
    )


LIVE = RunRecord(
    fingerprint=TP4,
    verdict=Verdict.PROGRESSING,
    phases=(
        PhaseRecord(Phase.WEIGHT_LOAD, 0.0, 80.0, 1, 10, True),
        PhaseRecord(Phase.CUDA_GRAPH, 80.0, None, 11, 15, False),
    ),
    lines=15,
    stop=StopPoint(Phase.CUDA_GRAPH, False, 15),
    last_text="Capturing batches",
    paths=("live.log",),
    content_hash="f" * 64,
    head_hash="cd" * 32,
    started=datetime(2026, 6, 1, 10, 0, 0),
    ready_s=None,
)


def _live(pool: list[RunRecord], in_phase_s: float, silence_s: float) -> Comparison:
    return compare(
        LIVE, ref="auto", reference=None, pool=pool, in_phase_s=in_phase_s, silence_s=silence_s, post_mortem=False
    )


def test_what_is_left_is_the_rest_of_the_phase_plus_the_time_from_its_end_to_ready() -> None:
    run = _ready_run(100, number=1)  # capture 80–180 s, ready at 200 s
    assert remaining_in(run, Phase.CUDA_GRAPH, 30.0) == 70.0 + 20.0
    # past the run's own time in the phase: nothing left of it, still the 20 s after it
    assert remaining_in(run, Phase.CUDA_GRAPH, 150.0) == 20.0
    # the phase over (ended 10 s ago, 110 s after it began): the run's 120 s from its start to ready, less 110
    assert remaining_in(run, Phase.CUDA_GRAPH, 110.0, ended=True) == 10.0
    assert remaining_in(run, Phase.DRAFT_INIT, 1.0) is None


def test_three_runs_give_a_figure_with_its_spread() -> None:
    # GIVEN captures of 100, 110 and 120 s WHEN a run is 30 s into its capture
    comparison = _live([_ready_run(c, number=i) for i, c in enumerate((100, 110, 120), 1)], 30.0, 5.0)
    # THEN 70–90 s of capture and 20 s after it are left: median 100 s, p10 92 s, p90 108 s (linear between the three)
    document = comparison.to_json()
    assert (document["eta_s"], document["eta_range_s"], document["runs_used"], document["eta_rough"]) == (
        100.0,
        [92.0, 108.0],
        3,
        False,
    )
    assert comparison.summary().endswith(
        "successful runs spend 1m50s in cuda_graph; ready in ~1m40s (1m32s–1m48s), from 3 runs"
    )


def test_two_runs_give_a_rough_guess_without_a_spread() -> None:
    comparison = _live([_ready_run(100, number=1), _ready_run(120, number=2)], 30.0, 5.0)
    # (70 + 20) and (90 + 20): median 100 s
    assert (comparison.to_json()["eta_s"], comparison.to_json()["eta_rough"]) == (100.0, True)
    assert comparison.summary().endswith("ready in roughly 1m40s (a rough guess, from only 2 runs, fewer than 3)")


def test_runs_of_another_tp_size_give_a_rough_guess_that_says_so() -> None:
    pool = [_ready_run(c, number=i, fingerprint=TP8) for i, c in enumerate((100, 110, 120), 1)]
    comparison = _live(pool, 30.0, 5.0)
    assert comparison.to_json()["eta_rough"] is True
    assert comparison.summary().endswith(
        "ready in roughly 1m40s (a rough guess, from runs of another setup: Qwen3-32B TP8)"
    )


def test_overdue_needs_ten_p90_and_the_floor_and_quiet_for_p90() -> None:
    pool = [_ready_run(120, number=i) for i in (1, 2, 3)]  # p90 of the capture: 120 s
    # 10 × p90 = 1200 s, p90 + 60 s = 180 s, quiet for p90 = 120 s
    assert _live(pool, 1199.0, 600.0).overdue is False  # under 10 × p90
    assert _live(pool, 1200.0, 119.0).overdue is False  # the bars still moved 119 s ago
    overdue = _live(pool, 1200.0, 120.0)
    assert (overdue.overdue, overdue.to_json()["overdue"]) == (True, True)
    assert overdue.summary().endswith(
        "overdue: 20m00s in cuda_graph, past 10 × its p90 (20m00s) and p90 + 1m00s (3m00s), "
        "no progress for 2m00s (p90 2m00s)"
    )


def test_a_short_phase_is_not_overdue_before_the_floor() -> None:
    pool = [_ready_run(2, number=i) for i in (1, 2, 3)]  # a 2 s capture: 10 × p90 is 20 s
    assert _live(pool, 61.0, 61.0).overdue is False  # past 10 × p90, not past p90 + 60 s
    assert _live(pool, 62.0, 62.0).overdue is True
