"""This run against earlier ones (a reference run's stop point, phase times, ETA, overdue) as JSON and in words."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from logphase.baselines.records import RunRecord
from logphase.baselines.stats import (
    MIN_RUNS_FOR_BUDGET,
    OVERDUE_FACTOR,
    OVERDUE_FLOOR_S,
    PHASES_WITHOUT_DURATION,
    Eta,
    Overdue,
    PhaseStats,
    estimate_eta_from,
    eta_anchors,
    learned_budgets,
    overdue_check,
    phase_stats,
)
from logphase.durations import format_duration
from logphase.phases import PROBLEM_VERDICTS, SUCCESS_VERDICTS, Phase, Verdict


@dataclass(frozen=True)
class Comparison:
    """This run against a reference run (where that one stopped) and successful runs (how long
    phases take): what `report.baseline` holds."""

    ref: str
    this: RunRecord
    reference: RunRecord | None
    pool_size: int
    stats: Mapping[Phase, PhaseStats]
    budgets: Mapping[Phase, float]
    in_phase_s: float | None
    silence_s: float | None
    eta: Eta | None
    overdue_tests: Overdue | None
    post_mortem: bool
    other_setups: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def overdue(self) -> bool:
        return self.overdue_tests is not None and self.overdue_tests.holds

    @property
    def eta_caveat(self) -> str | None:
        """Why the ETA is only a rough figure (too few runs, runs of another setup), or None."""
        if self.eta is None:
            return None
        if self.other_setups:
            return f"from runs of another setup: {', '.join(self.other_setups)}"
        if self.eta.runs < MIN_RUNS_FOR_BUDGET:
            return f"from only {_runs(self.eta.runs)}, fewer than {MIN_RUNS_FOR_BUDGET}"
        return None

    @property
    def passed_stop_point(self) -> bool | None:
        if self.reference is None:
            return None
        if self.reference.successful:
            return self.this.verdict in SUCCESS_VERDICTS
        return self.this.stop.position > self.reference.stop.position

    def to_json(self) -> dict[str, Any]:
        reference = self.reference
        return {
            "ref": self.ref,
            "run_id": reference.id if reference else None,
            "paths": list(reference.paths) if reference else [],
            "outcome": reference.outcome if reference else None,
            "same_setup": reference.fingerprint.key == self.this.fingerprint.key if reference else None,
            "fingerprint": self.this.fingerprint.to_json(),
            "lines": {"this": self.this.lines, "baseline": reference.lines if reference else None},
            "stop_point": reference.stop.to_json() if reference else None,
            "this_point": self.this.stop.to_json(),
            "passed_stop_point": self.passed_stop_point,
            "phases": self._phase_rows(),
            "runs": self.pool_size,
            "in_phase_s": _round(self.in_phase_s),
            "eta_s": _round(self.eta.seconds) if self.eta else None,
            "eta_range_s": [_round(self.eta.low), _round(self.eta.high)] if self.eta else None,
            "runs_used": self.eta.runs if self.eta else 0,
            "eta_rough": self.eta_caveat is not None if self.eta else None,
            "overdue": self.overdue,
            "learned_budgets": {phase.value: _round(seconds) for phase, seconds in self.budgets.items()},
            "summary": self.summary(),
        }

    def _phase_rows(self) -> list[dict[str, Any]]:
        phases = {record.phase for record in self.this.phases} | set(self.stats)
        rows = []
        current = self.this.stop.phase
        for phase in sorted(phases, key=lambda p: p.order):
            if phase in PHASES_WITHOUT_DURATION:
                continue
            record = self.this.phase(phase)
            seconds = record.seconds if record else None
            if phase is current and self.in_phase_s is not None and not self.this.stop.ended:
                seconds = self.in_phase_s
            stats = self.stats.get(phase)
            rows.append(
                {
                    "phase": phase.value,
                    "seconds": _round(seconds),
                    "median": _round(stats.median) if stats else None,
                    "p90": _round(stats.p90) if stats else None,
                    "runs": stats.runs if stats else 0,
                }
            )
        return rows

    def summary(self) -> str:
        """`392 lines vs 247 in the run that hung (stopped in cuda_graph at line 247): past its stall
        point; successful runs spend 6m in warmup, 2m left`."""
        parts: list[str] = []
        reference = self.reference
        if reference is not None:
            where = (
                f"{'done' if reference.verdict is Verdict.FINISHED else 'ready'} at line {reference.stop.line}"
                if reference.successful
                else f"stopped in {reference.stop.phase or 'an unknown phase'} at line {reference.stop.line}"
            )
            head = f"{self.this.lines} lines vs {reference.lines} in {_describe(reference)} ({where})"
            parts.append(f"{head}: {self._progress_words(reference)}")
        elif self.ref == "auto":
            parts.append(f"no earlier run of this setup ({self.this.fingerprint.describe()}) in the run store")
        parts.extend(self._timing_words())
        parts.extend(self.notes)
        return "; ".join(parts)

    def _progress_words(self, reference: RunRecord) -> str:
        this = self.this
        here = this.stop.phase or "an unknown phase"
        if reference.successful:
            if this.verdict in SUCCESS_VERDICTS:
                return f"{this.verdict.value} like it"
            if this.verdict in PROBLEM_VERDICTS and this.verdict is not Verdict.STALLED:
                return f"{this.verdict.value} in {here}, a phase that run got through"
            return f"not there yet (this run is in {here})"
        if self.passed_stop_point:
            return "past its stall point"
        if this.verdict in PROBLEM_VERDICTS and this.verdict is not Verdict.STALLED:
            return f"{this.verdict.value} before reaching its stall point (in {here})"
        if this.stop.position == reference.stop.position:
            return f"at its stall point ({reference.stop.describe()})"
        return f"not yet at its stall point (this run is in {here})"

    def _timing_words(self) -> list[str]:
        phase = self.this.stop.phase
        stats = self.stats.get(phase) if phase else None
        if self.this.verdict in SUCCESS_VERDICTS or phase is None:
            return []
        if not self.pool_size:
            return ["no successful run of this setup is recorded, so no ETA (logphase runs add LOG)"]
        words = []
        if stats is None:
            words.append(f"successful runs of this setup never spent time in {phase}")
        elif self.eta is not None:  # none for a run that ended (crashed, timed out): nothing is left
            words.append(f"successful runs spend {format_duration(stats.median)} in {phase}")
            words.append(self.eta_words(self.eta))
        if self.overdue_tests is not None and self.overdue_tests.holds:
            words.append(_overdue_words(self.overdue_tests, phase))
        return words

    def reference_phase_ends(self) -> list[tuple[Phase, float]]:
        """The reference run's ended phases: where each ended, in seconds after its first timestamp."""
        if self.reference is None:
            return []
        return [
            (record.phase, record.start_s + record.seconds)
            for record in self.reference.phases
            if record.ended and record.start_s is not None and record.seconds is not None
        ]

    def headline_eta(self) -> str | None:
        """What the table's first lines say of the time left (`ready in ~20s (11s–26s), from 3 runs`,
        `overdue: …`), or None when nothing is known or the run is over."""
        if self.this.verdict in SUCCESS_VERDICTS or self.post_mortem:
            return None
        words = [self.eta_words(self.eta)] if self.eta is not None else []
        if self.overdue_tests is not None and self.overdue_tests.holds:
            words.append("overdue")
        return "; ".join(words) or None

    def eta_words(self, eta: Eta) -> str:
        """`ready in ~20s (11s–26s), from 3 runs`; a figure without its spread when it is rough. For the
        table's first lines and watch's status line too: one wording."""
        caveat = self.eta_caveat
        spread = f" ({format_duration(eta.low)}–{format_duration(eta.high)})" if eta.high - eta.low >= 1 else ""
        if eta.high < 1:
            return "they were ready by now" if not self.post_mortem else "it ran longer than they took to be ready"
        if caveat is None:
            figure, source = f"~{format_duration(eta.seconds)}{spread}", f", from {_runs(eta.runs)}"
        else:
            figure, source = f"roughly {format_duration(eta.seconds)}", f" (a rough guess, {caveat})"
        if self.post_mortem:
            return f"it ended {figure} before they were ready{source}"
        return f"ready in {figure}{source}"


def _overdue_words(tests: Overdue, phase: Phase) -> str:
    """Which tests held: all three do, or it would not be called overdue."""
    silence = tests.in_phase_s if tests.silence_s is None else tests.silence_s
    return (
        f"overdue: {format_duration(tests.in_phase_s)} in {phase}, past {OVERDUE_FACTOR:g} × its p90 "
        f"({format_duration(tests.factor_limit)}) and p90 + {format_duration(OVERDUE_FLOOR_S)} "
        f"({format_duration(tests.floor_limit)}), no progress for {format_duration(silence)} "
        f"(p90 {format_duration(tests.quiet_limit)})"
    )


def compare(
    this: RunRecord,
    *,
    ref: str,
    reference: RunRecord | None,
    pool: Sequence[RunRecord],
    in_phase_s: float | None,
    silence_s: float | None,
    post_mortem: bool,
    notes: Sequence[str] = (),
) -> Comparison:
    stats = phase_stats(pool)
    phase = this.stop.phase
    finished = this.verdict in SUCCESS_VERDICTS or (
        this.verdict in PROBLEM_VERDICTS and this.verdict is not Verdict.STALLED
    )
    eta = None if finished else estimate_eta_from(pool, eta_anchors(this, in_phase_s))
    phase_stat = stats.get(phase) if phase else None
    overdue_tests = None if finished else overdue_check(phase_stat, in_phase_s, silence_s)
    other_setups = sorted({run.fingerprint.describe() for run in pool if run.fingerprint.key != this.fingerprint.key})
    return Comparison(
        ref=ref,
        this=this,
        reference=reference,
        pool_size=len(pool),
        stats=stats,
        budgets=learned_budgets(stats),
        in_phase_s=in_phase_s,
        silence_s=silence_s,
        eta=eta,
        overdue_tests=overdue_tests,
        post_mortem=post_mortem,
        other_setups=tuple(other_setups),
        notes=tuple(notes),
    )


def _describe(run: RunRecord) -> str:
    if run.label:
        label = run.label.lower()
        return "the run that hung" if label in ("hung", "stuck") else f"the run labelled {run.label!r}"
    match run.verdict:
        case Verdict.STALLED:
            return "the run that hung"
        case Verdict.CRASHED:
            return "the run that crashed"
        case Verdict.ABORTED:
            return "the run that aborted"
        case Verdict.TIMEOUT:
            return "the run that timed out"
        case Verdict.READY:
            return "the run that was ready"
        case Verdict.FINISHED:
            return "the run that finished"
        case Verdict.PROGRESSING:
            return "the run that was still starting"
        case Verdict.UNKNOWN:
            return "the earlier run"
        case _:
            assert_never(run.verdict)


def _runs(count: int) -> str:
    return f"{count} run{'s' if count != 1 else ''}"


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)
