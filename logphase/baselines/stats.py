"""Phase times over successful runs of a setup: percentiles, learned stall budgets, overdue and ETA (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from logphase.baselines.records import RunRecord
from logphase.phases import Phase

# Stalled when the silence in a phase exceeds BUDGET_FACTOR × p95 of that phase's duration in
# successful runs of the same setup (DESIGN.md §4.6). 3 × p95: a phase that is slow once in twenty
# runs still gets three times that before it is called hung; a real hang still ends in a few
# multiples of the usual time instead of the pack's worst-case default (often 30 min).
BUDGET_FACTOR = 3.0
# Overdue (a warning, not a verdict): longer in the phase than OVERDUE_FACTOR × p90 of successful
# runs, and nothing moved for longer than the whole phase usually takes (p90).
OVERDUE_FACTOR = 2.0
# A budget learned from fewer runs is noise; with fewer, the pack default stays (the ETA, which only
# informs, is given from one run on).
MIN_RUNS_FOR_BUDGET = 3
# Phases that take a second (kv_cache) would get a budget of seconds: a GC pause is not a hang.
MIN_LEARNED_BUDGET_S = 60.0
# Ready and serving are states the server stays in, not phases it goes through: they have no duration.
PHASES_WITHOUT_DURATION = frozenset({Phase.READY, Phase.SERVING})


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default): 3 runs give a p90 near the max."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of nothing")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class PhaseStats:
    """How long one phase took in successful runs (seconds): in how many runs, median, p90, p95."""

    phase: Phase
    runs: int
    median: float
    p90: float
    p95: float


def successful_pool(runs: Iterable[RunRecord], exclude_hash: str | None = None) -> list[RunRecord]:
    """Successful runs, each once, without the run being judged."""
    pool: dict[str, RunRecord] = {}
    for run in runs:
        if run.successful and run.content_hash != exclude_hash:
            pool.setdefault(run.content_hash, run)
    return list(pool.values())


def phase_stats(pool: Sequence[RunRecord]) -> dict[Phase, PhaseStats]:
    durations: dict[Phase, list[float]] = {}
    for run in pool:
        for record in run.phases:
            if record.seconds is not None and record.phase not in PHASES_WITHOUT_DURATION:
                durations.setdefault(record.phase, []).append(record.seconds)
    return {
        phase: PhaseStats(
            phase, len(values), percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.95)
        )
        for phase, values in sorted(durations.items(), key=lambda item: item[0].order)
    }


def learned_budgets(stats: Mapping[Phase, PhaseStats]) -> dict[Phase, float]:
    """BUDGET_FACTOR × p95 per phase with enough successful runs (never under MIN_LEARNED_BUDGET_S)."""
    return {
        phase: max(MIN_LEARNED_BUDGET_S, BUDGET_FACTOR * s.p95)
        for phase, s in stats.items()
        if s.runs >= MIN_RUNS_FOR_BUDGET
    }


@dataclass(frozen=True)
class Eta:
    """Expected time until ready: the median over successful runs of (their time from this phase's
    start to ready) − (the time this run spent in the phase so far); never negative."""

    seconds: float
    low: float
    high: float
    runs: int


def estimate_eta(pool: Sequence[RunRecord], phase: Phase | None, in_phase_s: float | None) -> Eta | None:
    if phase is None or in_phase_s is None:
        return None
    remaining = []
    for run in pool:
        record = run.phase(phase)
        if record is None or record.start_s is None or run.ready_s is None:
            continue
        remaining.append(max(0.0, run.ready_s - record.start_s - in_phase_s))
    if not remaining:
        return None
    return Eta(percentile(remaining, 0.5), percentile(remaining, 0.1), percentile(remaining, 0.9), len(remaining))


def in_phase_seconds(run: RunRecord, now: datetime | None) -> float | None:
    """How long the run has been in the phase it stopped in, as of `now` (log time)."""
    record = run.phase(run.stop.phase) if run.stop.phase else None
    if record is None or record.start_s is None or run.started is None or now is None:
        return None
    return max(0.0, (now - (run.started + timedelta(seconds=record.start_s))).total_seconds())
