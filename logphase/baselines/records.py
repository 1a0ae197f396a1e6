"""A run as the store keeps it: its phases, where it stopped, and building that from spans or a Report (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from logphase.phases import MAIN_PROCESS_PHASES, SUCCESS_VERDICTS, Phase, Verdict

if TYPE_CHECKING:  # types only: a plain `analyze` reads RunRecord's module without hashing logs
    from logphase.baselines.fingerprint import Fingerprint, LogIdentity

# A ready run whose user label says otherwise is not a successful run.
PROBLEM_LABELS = frozenset(
    {"hung", "stalled", "stuck", "crashed", "aborted", "timeout", "failed", "bad", "oom", "killed"}
)


@dataclass(frozen=True)
class PhaseRecord:
    """One phase of a run across its ranks: when it began (seconds after the run's first
    timestamp), how long it took, and the lines of its first and last milestone."""

    phase: Phase
    start_s: float | None
    seconds: float | None
    start_line: int
    end_line: int
    ended: bool


@dataclass(frozen=True)
class StopPoint:
    """Where a run stopped: the phase the server was in (its slowest rank; lazy compile counts as
    the phase it happens in), whether that phase had ended, whether the speculative draft's own
    init had begun after it (SGLang ≤0.5.10 builds the draft after the target's CUDA graphs), and
    the last line."""

    phase: Phase | None
    ended: bool
    line: int
    draft_after: bool = False

    @property
    def milestone(self) -> str:
        if self.phase is None:
            return "none"
        text = f"{self.phase.value}:{'end' if self.ended else 'begin'}"
        return f"{text}+draft_init" if self.draft_after else text

    def describe(self) -> str:
        """Where it stopped in the words of the analysis report (its phase table's names): `in cuda_graph`,
        `after cuda_graph`, `after cuda_graph, then in draft_init` (the draft model's init, begun after it)."""
        if self.phase is None:
            return "before any phase"
        text = f"{'after' if self.ended else 'in'} {self.phase.value}"
        return f"{text}, then in {Phase.DRAFT_INIT.value}" if self.draft_after else text

    @property
    def position(self) -> tuple[int, int, int]:
        """Milestones in startup order: comparable across log verbosity and TP sizes."""
        return (-1 if self.phase is None else self.phase.order, int(self.ended), int(self.draft_after))

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase.value if self.phase else None, "line": self.line, "milestone": self.milestone}


@dataclass(frozen=True)
class RunRecord:
    """One run as the store keeps it."""

    fingerprint: Fingerprint
    verdict: Verdict
    phases: tuple[PhaseRecord, ...]
    lines: int
    stop: StopPoint
    last_text: str
    paths: tuple[str, ...]
    content_hash: str
    head_hash: str
    started: datetime | None
    ready_s: float | None
    label: str | None = None
    id: int | None = None
    recorded_at: datetime | None = None

    @property
    def outcome(self) -> str:
        return self.label or self.verdict.value

    @property
    def successful(self) -> bool:
        return self.verdict in SUCCESS_VERDICTS and (self.label or "").lower() not in PROBLEM_LABELS

    def phase(self, phase: Phase) -> PhaseRecord | None:
        return next((record for record in self.phases if record.phase is phase), None)


class SpanLike(Protocol):
    """What a run's spans offer, from a Report (SpanRow) or a live Timeline (PhaseSpan)."""

    @property
    def phase(self) -> Phase: ...
    @property
    def rank(self) -> str | None: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def start(self) -> datetime | None: ...
    @property
    def end(self) -> datetime | None: ...
    @property
    def ended(self) -> bool: ...


def phase_records(spans: Iterable[SpanLike]) -> tuple[tuple[PhaseRecord, ...], datetime | None]:
    """Per-rank spans → one record per phase (first begin to last end over the ranks), in the
    order the phases began; and the run's first timestamp."""
    grouped: dict[Phase, list[SpanLike]] = {}
    for span in spans:
        grouped.setdefault(span.phase, []).append(span)
    starts = [span.start for members in grouped.values() for span in members if span.start is not None]
    origin = min(starts) if starts else None
    records = []
    for phase, members in grouped.items():
        begun = [s.start for s in members if s.start is not None]
        finished = [s.end for s in members if s.end is not None]
        start, end = (min(begun) if begun else None), (max(finished) if finished else None)
        records.append(
            PhaseRecord(
                phase=phase,
                start_s=(start - origin).total_seconds() if start and origin else None,
                seconds=max(0.0, (end - start).total_seconds()) if start and end else None,
                start_line=min(s.start_line for s in members),
                end_line=max(s.end_line for s in members),
                ended=all(s.ended for s in members),
            )
        )
    return in_start_order(records), origin


def in_start_order(records: Iterable[PhaseRecord]) -> tuple[PhaseRecord, ...]:
    """Phases in the order they began; those without a timestamp last, by line."""
    return tuple(sorted(records, key=lambda r: (r.start_s if r.start_s is not None else float("inf"), r.start_line)))


def stop_point(spans: Iterable[SpanLike], last_line: int) -> StopPoint:
    """The server's milestone (docs/design.md §4.5): the main process's phase once it is past the
    ranks' init, else the slowest rank's. Lazy compile is not a milestone of its own."""
    by_rank: dict[str | None, list[SpanLike]] = {}
    for span in spans:
        if span.phase is not Phase.COMPILE:
            by_rank.setdefault(span.rank, []).append(span)
    if not by_rank:
        return StopPoint(None, False, last_line)

    def reached(members: list[SpanLike]) -> tuple[Phase, bool, bool]:
        phase = max((s.phase for s in members), key=lambda p: p.order)
        own = [s for s in members if s.phase is phase]
        begun = min(s.start_line for s in own)
        draft_after = any(s.phase is Phase.DRAFT_INIT and s.start_line > begun for s in members)
        return phase, all(s.ended for s in own), draft_after

    main = reached(by_rank[None]) if None in by_rank else None
    ranks = [reached(members) for rank, members in by_rank.items() if rank is not None]
    if main is not None and (main[0] in MAIN_PROCESS_PHASES or not ranks):
        phase, ended, draft_after = main
    else:
        phase, ended, draft_after = min(ranks, key=lambda item: (item[0].order, item[1], item[2]))
    return StopPoint(phase, ended, last_line, draft_after)


def build_run(
    spans: Sequence[SpanLike],
    *,
    verdict: Verdict,
    lines: int,
    last_line: int,
    last_text: str,
    paths: Sequence[str],
    identity: LogIdentity,
    label: str | None = None,
) -> RunRecord:
    records, origin = phase_records(spans)
    ready = next((r for r in records if r.phase in (Phase.READY, Phase.SERVING) and r.start_s is not None), None)
    ready_s = ready.start_s if ready else None
    if ready_s is None and verdict in SUCCESS_VERDICTS:
        # ready by its health endpoint, or a system without a ready line: the last milestone
        ends = [r.start_s + (r.seconds or 0.0) for r in records if r.start_s is not None]
        ready_s = max(ends) if ends else None
    return RunRecord(
        fingerprint=identity.fingerprint,
        verdict=verdict,
        phases=records,
        lines=lines,
        stop=stop_point(spans, last_line),
        last_text=last_text,
        paths=tuple(paths),
        content_hash=identity.content_hash,
        head_hash=identity.head_hash,
        started=origin,
        ready_s=ready_s,
        label=label,
    )
