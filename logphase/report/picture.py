"""The run's picture, worked out once for every format: phase bars per rank group on one time axis,
the marked ranks, the root cause's moment and the baseline run's phase ends."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from logphase.phases import PROBLEM_VERDICTS, Phase, Verdict
from logphase.ranks import MAIN, format_rank_set, natural_key
from logphase.report.model import Report, SpanRow

# Ranks whose bars begin and end this close (a share of the whole axis, at least a second) are drawn
# as one row: a column of the terminal is about 1 % of the axis, so two columns apart is the same moment.
SAME_MOMENT_SHARE = 0.02
SAME_MOMENT_FLOOR_S = 1.0

# One letter per phase (lower case: the draft model's own), so bars read without colour.
PHASE_LETTERS = {
    Phase.LAUNCH: "L",
    Phase.TOKENIZER: "T",
    Phase.DIST_INIT: "D",
    Phase.WEIGHT_LOAD: "W",
    Phase.KV_CACHE: "K",
    Phase.DRAFT_INIT: "E",
    Phase.COMPILE: "J",
    Phase.CUDA_GRAPH: "G",
    Phase.HTTP_START: "H",
    Phase.WARMUP: "U",
    Phase.READY: "R",
    Phase.SERVING: "S",
}

NO_TIMESTAMPS = "Timeline: the log has no timestamps, so there is no time axis."


def phase_name(phase: Phase, draft: bool) -> str:
    """`cuda_graph (draft)` for a draft model's own phase; draft_init is the draft's by name."""
    return f"{phase.value} (draft)" if draft and phase is not Phase.DRAFT_INIT else phase.value


@dataclass(frozen=True)
class Bar:
    """One phase of a rank group: from its first rank's start to its last rank's end."""

    phase: Phase
    draft: bool
    start: datetime
    end: datetime
    ended: bool  # every rank of the group saw the phase end

    @property
    def name(self) -> str:
        return phase_name(self.phase, self.draft)

    @property
    def letter(self) -> str:
        letter = PHASE_LETTERS[self.phase]
        return letter.lower() if self.draft and self.phase is not Phase.DRAFT_INIT else letter


@dataclass(frozen=True)
class Lane:
    """One row of the picture: ranks that went through the same phases at the same moments."""

    ranks: tuple[str | None, ...]
    bars: tuple[Bar, ...]
    mark: Verdict | None = None  # the verdict, on the rank group that caused it

    @property
    def label(self) -> str:
        return format_rank_set(self.ranks)


@dataclass(frozen=True)
class Moment:
    """A marked moment on the axis: the root cause, or where a baseline run's phase ended."""

    at: datetime
    label: str
    phase: Phase | None = None


@dataclass(frozen=True)
class Picture:
    start: datetime
    end: datetime
    lanes: tuple[Lane, ...]
    cause: Moment | None
    ticks: tuple[Moment, ...]  # the baseline run's phase ends, on this run's axis

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    def legend(self) -> list[tuple[str, str]]:
        """(letter, phase name) of every bar and tick, in the order the letters first appear."""
        seen: dict[str, str] = {}
        bars = sorted((bar for lane in self.lanes for bar in lane.bars), key=lambda bar: (bar.start, bar.phase.order))
        for bar in bars:
            seen.setdefault(bar.letter, bar.name)
        for tick in self.ticks:
            if tick.phase is not None:
                seen.setdefault(PHASE_LETTERS[tick.phase], tick.phase.value)
        return list(seen.items())


def picture(report: Report) -> Picture | None:
    """The picture of a report; None when no phase carries a time (nothing to put on an axis)."""
    timed = [span for span in report.phases if span.start is not None]
    if not timed:
        return None
    log_end = report.last_line.time if report.last_line is not None else None
    bars_by_rank: dict[str | None, list[Bar]] = {}
    for span in timed:
        bars_by_rank.setdefault(span.rank, []).append(_bar(span, log_end))
    start = min(bar.start for bars in bars_by_rank.values() for bar in bars)
    cause, ticks = _cause(report), _ticks(report, start)
    moments = [bar.end for bars in bars_by_rank.values() for bar in bars] + [tick.at for tick in ticks]
    moments += [moment for moment in (log_end, cause.at if cause else None) if moment is not None]
    end = max(max(moments), start + timedelta(seconds=1))  # an axis of one instant gets a second
    tolerance = max(SAME_MOMENT_FLOOR_S, SAME_MOMENT_SHARE * (end - start).total_seconds())
    marked = _marked_ranks(report)
    lanes = [
        Lane(ranks, bars, report.verdict if set(ranks) & marked else None)
        for ranks, bars in _groups(bars_by_rank, marked, tolerance)
    ]
    return Picture(
        start=start,
        end=end,
        lanes=tuple(lanes),
        cause=cause,
        ticks=ticks,
    )


def _bar(span: SpanRow, log_end: datetime | None) -> Bar:
    assert span.start is not None
    # a phase with no end of its own lasts, as far as the log tells, to the log's end
    end = span.end or (log_end if log_end is not None and not span.ended else None) or span.start
    return Bar(span.phase, span.draft, span.start, max(end, span.start), span.ended)


def _cause(report: Report) -> Moment | None:
    root = report.root_cause
    if root is None or root.time is None:
        return None
    title = "last progress" if report.verdict is Verdict.STALLED else "root cause"
    return Moment(root.time, f"{title}, line {root.line}")


def _marked_ranks(report: Report) -> set[str | None]:
    """The culprits; without any, the root cause's rank when it failed (a stall of every rank marks none)."""
    if report.culprit_ranks:
        return set(report.culprit_ranks)
    root = report.root_cause
    if root is not None and report.verdict in PROBLEM_VERDICTS and report.verdict is not Verdict.STALLED:
        return {root.rank}
    return set()


def _groups(
    bars_by_rank: dict[str | None, list[Bar]], marked: set[str | None], tolerance: float
) -> list[tuple[tuple[str | None, ...], tuple[Bar, ...]]]:
    """Ranks grouped with the first rank they match; the main process first, then ranks in natural order."""
    order = sorted(bars_by_rank, key=lambda rank: (rank is not None, natural_key(rank or MAIN)))
    groups: list[tuple[list[str | None], list[Bar]]] = []
    for rank in order:
        bars = sorted(bars_by_rank[rank], key=lambda bar: (bar.start, bar.phase.order))
        home = next(
            (
                group
                for group in groups
                if (rank in marked) == (group[0][0] in marked) and _alike(group[1], bars, tolerance)
            ),
            None,
        )
        if home is None:
            groups.append(([rank], bars))
            continue
        home[0].append(rank)
        home[1][:] = [_merge(mine, theirs) for mine, theirs in zip(home[1], bars, strict=True)]
    return [(tuple(ranks), tuple(bars)) for ranks, bars in groups]


def _alike(ours: Sequence[Bar], theirs: Sequence[Bar], tolerance: float) -> bool:
    if [(bar.phase, bar.draft, bar.ended) for bar in ours] != [(bar.phase, bar.draft, bar.ended) for bar in theirs]:
        return False
    return all(
        abs((a.start - b.start).total_seconds()) <= tolerance and abs((a.end - b.end).total_seconds()) <= tolerance
        for a, b in zip(ours, theirs, strict=True)
    )


def _merge(ours: Bar, theirs: Bar) -> Bar:
    return Bar(ours.phase, ours.draft, min(ours.start, theirs.start), max(ours.end, theirs.end), ours.ended)


def _ticks(report: Report, start: datetime) -> tuple[Moment, ...]:
    if report.baseline is None:
        return ()
    return tuple(
        Moment(start + timedelta(seconds=seconds), f"{phase.value} ended in the baseline run", phase)
        for phase, seconds in report.baseline.reference_phase_ends()
    )
