"""Phase times over successful runs of a setup: percentiles, learned stall budgets, overdue and ETA (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from logphase.phases import Phase

if TYPE_CHECKING:  # types only: judging reads budgets from here without the run record's module
    from logphase.baselines.records import RunRecord

# Stalled when the silence in a phase exceeds BUDGET_FACTOR × p95 of that phase's duration in
# successful runs of the same setup (docs/design.md §4.6). 3 × p95: a phase that is slow once in twenty
# runs still gets three times that before it is called hung; a real hang still ends in a few
# multiples of the usual time instead of the pack's worst-case default (often 30 min).
BUDGET_FACTOR = 3.0
# Overdue (a warning, not a verdict) needs all three: longer in the phase than OVERDUE_FACTOR × p90
# of successful runs (Jenkins calls a build stuck at 10 × its usual time), longer than p90 +
# OVERDUE_FLOOR_S (a phase of seconds is not late after seconds: a GC pause, a slow disk), and no
# progress for as long as the whole phase usually takes (p90: a phase that still moves is slow, not
# stuck). The quiet test stays under the stall budget (BUDGET_FACTOR × p95), so overdue warns before
# the stall instead of arriving with it.
OVERDUE_FACTOR = 10.0
OVERDUE_FLOOR_S = 60.0
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


def phase_budget(stats: PhaseStats) -> float:
    """The silence a phase may have: BUDGET_FACTOR × p95 of its duration, never under MIN_LEARNED_BUDGET_S."""
    return max(MIN_LEARNED_BUDGET_S, BUDGET_FACTOR * stats.p95)


def learned_budgets(stats: Mapping[Phase, PhaseStats]) -> dict[Phase, float]:
    """The phase budget of each phase with enough successful runs to trust it."""
    return {phase: phase_budget(s) for phase, s in stats.items() if s.runs >= MIN_RUNS_FOR_BUDGET}


@dataclass(frozen=True)
class Eta:
    """Expected time until ready (seconds): the median over successful runs, p10–p90 as the spread,
    and from how many runs."""

    seconds: float
    low: float
    high: float
    runs: int


def remaining_in(run: RunRecord, phase: Phase, in_phase_s: float, ended: bool = False) -> float | None:
    """How long `run` still needed to be ready once it had spent `in_phase_s` in `phase`: what is
    left of its own time in the phase (never below zero), plus its own time from the phase's end to
    ready (every later phase and the gaps between them). None when the run never went through it.

    When this run's phase has `ended` (and an unmarked stretch such as vLLM's compile, or the gap
    before the next milestone, runs on), the time since the phase began counts against the rest
    too: the run's time from the phase's start to ready, less it. Its record may also span more
    than this run has seen of it (SGLang captures the draft's graphs after the target's).

    Measured from the phase, not from the run's first line: a launch line stamped on another clock
    (a year-less stamp dated a day off) moves the run's origin, not the time from a phase to ready."""
    record = run.phase(phase)
    if record is None or record.start_s is None or run.ready_s is None:
        return None
    to_ready = max(0.0, run.ready_s - record.start_s)
    if ended or record.seconds is None:
        return max(0.0, to_ready - in_phase_s)
    after = max(0.0, to_ready - record.seconds)
    return max(0.0, record.seconds - in_phase_s) + after


def estimate_eta(
    pool: Sequence[RunRecord], phase: Phase | None, in_phase_s: float | None, ended: bool = False
) -> Eta | None:
    """ETA to ready for a run `in_phase_s` into `phase` (which has `ended`, or not), from the
    successful runs in `pool`."""
    if phase is None or in_phase_s is None or phase in PHASES_WITHOUT_DURATION:
        return None
    remaining = [left for run in pool if (left := remaining_in(run, phase, in_phase_s, ended)) is not None]
    if not remaining:
        return None
    return Eta(percentile(remaining, 0.5), percentile(remaining, 0.1), percentile(remaining, 0.9), len(remaining))


@dataclass(frozen=True)
class Anchor:
    """Where an ETA is measured from: the phase this run began last, how long ago, and whether it ended."""

    phase: Phase
    elapsed_s: float
    ended: bool


def eta_anchors(run: RunRecord, in_phase_s: float | None) -> list[Anchor]:
    """The phases to measure an ETA from, best first: the one this run began last (a rank ahead, the
    main process, vLLM's compile: the latest news of the run), then the phase the run stopped in."""
    current = run.phase(run.stop.phase) if run.stop.phase else None
    if current is None or current.start_s is None or in_phase_s is None:
        return []
    now_s = current.start_s + in_phase_s
    begun = [
        r for r in run.phases if r.start_s is not None and r.start_s <= now_s and r.phase not in PHASES_WITHOUT_DURATION
    ]
    latest = max(begun, key=lambda r: (r.start_s or 0.0, r.start_line), default=current)
    anchors = [Anchor(latest.phase, now_s - (latest.start_s or 0.0), latest.ended)]
    if latest is not current:
        anchors.append(Anchor(current.phase, in_phase_s, run.stop.ended))
    return anchors


def estimate_eta_from(pool: Sequence[RunRecord], anchors: Sequence[Anchor]) -> Eta | None:
    """The ETA from the first anchor that successful runs went through."""
    for anchor in anchors:
        eta = estimate_eta(pool, anchor.phase, anchor.elapsed_s, anchor.ended)
        if eta is not None:
            return eta
    return None


@dataclass(frozen=True)
class Overdue:
    """The three tests of overdue, each with its threshold (seconds); overdue when all three hold."""

    in_phase_s: float
    silence_s: float | None
    factor_limit: float
    floor_limit: float
    quiet_limit: float

    @property
    def past_factor(self) -> bool:
        return self.in_phase_s >= self.factor_limit

    @property
    def past_floor(self) -> bool:
        return self.in_phase_s >= self.floor_limit

    @property
    def silent(self) -> bool:
        # a post-mortem log has no silence of its own: the time in the phase stands for it
        return (self.in_phase_s if self.silence_s is None else self.silence_s) >= self.quiet_limit

    @property
    def holds(self) -> bool:
        return self.past_factor and self.past_floor and self.silent


def overdue_check(stats: PhaseStats | None, in_phase_s: float | None, silence_s: float | None) -> Overdue | None:
    """The overdue tests for a run `in_phase_s` into a phase whose successful runs gave `stats`."""
    if stats is None or in_phase_s is None:
        return None
    return Overdue(
        in_phase_s=in_phase_s,
        silence_s=silence_s,
        factor_limit=OVERDUE_FACTOR * stats.p90,
        floor_limit=stats.p90 + OVERDUE_FLOOR_S,
        quiet_limit=stats.p90,
    )


def in_phase_seconds(run: RunRecord, now: datetime | None) -> float | None:
    """How long the run has been in the phase it stopped in, as of `now` (log time)."""
    record = run.phase(run.stop.phase) if run.stop.phase else None
    if record is None or record.start_s is None or run.started is None or now is None:
        return None
    return max(0.0, (now - (run.started + timedelta(seconds=record.start_s))).total_seconds())
