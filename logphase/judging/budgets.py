"""The one rule for how long a phase may stay silent: --stall-after, else learned, else the pack's, else a fallback."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from logphase.baselines.stats import PhaseStats, learned_budgets
from logphase.phases import Phase

# Without baselines or a pack budget, this much silence in a phase makes a live run `stalled`.
FALLBACK_BUDGET_S = 900.0


@dataclass(frozen=True)
class Budget:
    seconds: float
    source: str  # said next to the budget: "--stall-after", "learned from 5 successful runs", …


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


def budgets_from(
    defaults: Mapping[Phase, float], stats: Mapping[Phase, PhaseStats], *, stall_after_s: float | None = None
) -> Budgets:
    """The packs' budgets, overridden where successful runs of this setup taught better ones."""
    learned = learned_budgets(stats)
    return Budgets(defaults, learned, {phase: stats[phase].runs for phase in learned}, stall_after_s)
