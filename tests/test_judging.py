"""judging/: the verdict's exit code (one exhaustive match) and the one budget rule (pure)."""

from __future__ import annotations

import pytest

from logphase.baselines.stats import PhaseStats
from logphase.errors import ExitCode
from logphase.judging.budgets import Budget, Budgets, budgets_from
from logphase.judging.confidence import Confidence
from logphase.judging.exits import exit_code
from logphase.phases import Phase, Verdict

# The exit codes of docs/design.md §6 as `analyze --help` states them: 0 ready (a finished job too),
# 4 stalled/crashed/aborted/timeout, 5 still starting, 6 unknown.
EXPECTED_EXITS = {
    Verdict.READY: 0,
    Verdict.FINISHED: 0,
    Verdict.STALLED: 4,
    Verdict.CRASHED: 4,
    Verdict.ABORTED: 4,
    Verdict.TIMEOUT: 4,
    Verdict.PROGRESSING: 5,
    Verdict.UNKNOWN: 6,
}


@pytest.mark.parametrize("verdict", list(Verdict))
def test_every_verdict_has_the_documented_exit_code(verdict: Verdict) -> None:
    # GIVEN a verdict the evidence carries WHEN turned into an exit code THEN it is the documented one
    assert exit_code(verdict, Confidence.HIGH) == ExitCode(EXPECTED_EXITS[verdict])
    assert exit_code(verdict, Confidence.MEDIUM) == ExitCode(EXPECTED_EXITS[verdict])


@pytest.mark.parametrize("verdict", list(Verdict))
def test_a_success_the_evidence_does_not_carry_is_no_exit_0(verdict: Verdict) -> None:
    # GIVEN a verdict with low confidence WHEN turned into an exit code THEN a success is unknown (6),
    # and every other verdict keeps its code (a problem is still a problem)
    wanted = 6 if verdict in (Verdict.READY, Verdict.FINISHED) else EXPECTED_EXITS[verdict]
    assert exit_code(verdict, Confidence.LOW) == ExitCode(wanted)


def test_the_budget_rule_stall_after_then_learned_then_pack_then_fallback() -> None:
    # GIVEN a pack budget for weight_load and cuda_graph, and a budget learned for cuda_graph from 4 runs
    budgets = Budgets(
        defaults={Phase.WEIGHT_LOAD: 600.0, Phase.CUDA_GRAPH: 1800.0},
        learned={Phase.CUDA_GRAPH: 357.0},
        learned_from={Phase.CUDA_GRAPH: 4},
    )
    # WHEN asked per phase THEN the learned budget wins, then the pack's, then the 15 min fallback
    assert budgets.for_phase(Phase.CUDA_GRAPH) == Budget(357.0, "learned from 4 successful runs")
    assert budgets.for_phase(Phase.WEIGHT_LOAD) == Budget(600.0, "pack default")
    assert budgets.for_phase(Phase.KV_CACHE) == Budget(900.0, "default")
    assert budgets.for_phase(None) == Budget(900.0, "default")
    # AND --stall-after is one budget for every phase
    asked = Budgets(defaults=budgets.defaults, learned=budgets.learned, stall_after_s=20.0)
    assert asked.for_phase(Phase.CUDA_GRAPH) == Budget(20.0, "--stall-after")


def test_budgets_are_learned_from_three_successful_runs_on() -> None:
    # GIVEN phase statistics of two and of three successful runs (p95 100 s each)
    stats = {
        Phase.WEIGHT_LOAD: PhaseStats(Phase.WEIGHT_LOAD, 2, 90.0, 98.0, 100.0),
        Phase.CUDA_GRAPH: PhaseStats(Phase.CUDA_GRAPH, 3, 90.0, 98.0, 100.0),
    }
    # WHEN the pipeline's and the watch's budgets are drawn from them
    budgets = budgets_from({Phase.WEIGHT_LOAD: 600.0, Phase.CUDA_GRAPH: 1800.0}, stats)
    # THEN three runs teach 3 × p95; two runs leave the pack's budget
    assert budgets.for_phase(Phase.CUDA_GRAPH) == Budget(300.0, "learned from 3 successful runs")
    assert budgets.for_phase(Phase.WEIGHT_LOAD) == Budget(600.0, "pack default")
