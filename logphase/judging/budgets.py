"""How long a phase may stay silent: --stall-after, a bar's pace, learned, a cadence, the pack's, a fallback."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from logphase.baselines.stats import PhaseStats, learned_budgets
from logphase.durations import format_duration
from logphase.logs.timeline import BarPace, PhaseSpan, Timeline
from logphase.phases import Phase

# Without baselines or a pack budget, this much silence in a phase makes a live run `stalled`.
FALLBACK_BUDGET_S = 900.0
# A bar short of its total that has not ticked for BAR_K times the slowest wait between its ticks so far
# has stopped: its steps are alike (one batch size, one shard each), and k leaves room for a step several
# times the slowest seen (a bigger shard, a lazy compile). Never before BAR_FLOOR_S: a bar of fast ticks
# can still meet one slow step (a JIT compile inside a capture, a shard read from cold storage).
BAR_K = 5
BAR_FLOOR_S = 120.0
# A rank that writes regularly in a phase (and the one before it) has stopped once it has been silent
# for CADENCE_K times its longest wait between lines there, never before CADENCE_FLOOR_S; it takes
# CADENCE_MIN_GAPS waits to call it a cadence. Looser than a bar's: lines are less alike than ticks.
CADENCE_K = 10
CADENCE_FLOOR_S = 300.0
CADENCE_MIN_GAPS = 4


@dataclass(frozen=True)
class Budget:
    seconds: float
    source: str  # said next to the budget: "--stall-after", "learned from 5 successful runs", …
    bar: BarPace | None = None  # the bar whose pace set it


@dataclass(frozen=True)
class Budgets:
    """Silence budgets per phase, from every source there is for this run."""

    defaults: Mapping[Phase, float] = field(default_factory=dict)  # the packs' (by system)
    learned: Mapping[Phase, float] = field(default_factory=dict)  # from successful runs of this setup
    learned_from: Mapping[Phase, int] = field(default_factory=dict)  # how many runs each learned budget saw
    stall_after_s: float | None = None  # one budget for every phase, asked for by the user

    def for_phase(self, phase: Phase | None) -> Budget:
        if self.stall_after_s is not None:
            return Budget(self.stall_after_s, "--stall-after")
        if phase is not None and phase in self.learned:
            return Budget(self.learned[phase], f"learned from {self.learned_from.get(phase, 0)} successful runs")
        if phase is not None and phase in self.defaults:
            return Budget(self.defaults[phase], "pack default")
        return Budget(FALLBACK_BUDGET_S, "default")

    def for_run(self, timeline: Timeline, phase: Phase | None) -> Budget:
        """The budget of the phase the run is in, with the evidence of the log itself: --stall-after;
        a bar still short of its total at the newest progress (its pace); learned; the cadence of the
        lines of the ranks in the phase; the pack's; the fallback."""
        if self.stall_after_s is not None:
            return self.for_phase(phase)
        bar = timeline.bar
        if bar is not None and bar.slowest_tick_s is not None:
            seconds = max(BAR_K * bar.slowest_tick_s, BAR_FLOOR_S)
            slowest = format_duration(bar.slowest_tick_s)
            words = f"{BAR_K} × its slowest tick ({slowest}), at least {format_duration(BAR_FLOOR_S)}"
            return Budget(seconds, words, bar)
        if phase is not None and phase in self.learned:
            return self.for_phase(phase)
        cadence = _cadence(timeline, phase)
        if cadence is not None:
            return cadence
        return self.for_phase(phase)


def budgets_from(
    defaults: Mapping[Phase, float], stats: Mapping[Phase, PhaseStats], *, stall_after_s: float | None = None
) -> Budgets:
    """The packs' budgets, overridden where successful runs of this setup taught better ones."""
    learned = learned_budgets(stats)
    return Budgets(defaults, learned, {phase: stats[phase].runs for phase in learned}, stall_after_s)


def _cadence(timeline: Timeline, phase: Phase | None) -> Budget | None:
    """The most generous cadence bound among the ranks still in `phase`: each from the longest wait
    between its lines there and in the phase before, where it wrote at least CADENCE_MIN_GAPS times."""
    if phase is None:
        return None
    # each rank's latest target phase before `phase`: one pass, not one per rank (a log of many ranks)
    previous_of: dict[str | None, PhaseSpan] = {}
    for other in timeline.spans:
        if other.phase.order < phase.order and not other.draft:
            held = previous_of.get(other.rank)
            if held is None or other.phase.order > held.phase.order:
                previous_of[other.rank] = other
    bounds: list[tuple[float, float]] = []
    for span in timeline.spans:
        if span.phase is not phase or span.ended or span.draft:
            continue
        previous = previous_of.get(span.rank)
        spans = [span] + ([previous] if previous is not None else [])
        gaps = sum(s.gaps for s in spans)
        longest = max((s.longest_gap_s for s in spans if s.longest_gap_s is not None), default=None)
        if span.gaps and gaps >= CADENCE_MIN_GAPS and longest is not None:
            bounds.append((max(CADENCE_K * longest, CADENCE_FLOOR_S), longest))
    if not bounds:
        return None
    seconds, longest = max(bounds)
    words = (
        f"{CADENCE_K} × the longest wait between the ranks' lines in {phase} and the phase before "
        f"({format_duration(longest)}), at least {format_duration(CADENCE_FLOOR_S)}"
    )
    return Budget(seconds, words)


def stall_words(budget: Budget, silence_s: float, phase: Phase | None) -> str:
    """Why a silence is a stall, naming the rule that bounded it (the same words in analyze and watch):
    `the cuda_graph bar stopped at 11/24 (line 40): still for 4m00s, past its bound of 2m00s (5 × …)`,
    else `no progress for 16m in weight_load (budget 15m00s, default)`."""
    bound = format_duration(budget.seconds)
    bar = budget.bar
    if bar is not None:
        return (
            f"the {bar.phase} bar stopped at {bar.done}/{bar.total} (line {bar.last_tick.line}): "
            f"still for {format_duration(silence_s)}, past its bound of {bound} ({budget.source})"
        )
    where = f" in {phase}" if phase is not None else ""
    return f"no progress for {format_duration(silence_s)}{where} (budget {bound}, {budget.source})"
