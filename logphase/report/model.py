"""The Report of `analyze`: everything the renderers show, and its stable JSON form (docs/design.md §5)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from logphase.errors import ExitCode
from logphase.logs.reader import ContextLine
from logphase.phases import Phase, Verdict
from logphase.report.sections import BaselineSection, FlightSection, NodesSection, Section, StacksSection

SCHEMA = "logphase.analysis/1"


@dataclass(frozen=True)
class InputSummary:
    path: str
    lines: int
    bytes: int


@dataclass(frozen=True)
class EvidenceLine:
    """A line a verdict rests on."""

    path: str
    line: int
    text: str


@dataclass(frozen=True)
class HealthAnswers:
    """The health route's answers the log shows (uvicorn's access lines `"GET /health HTTP/1.1" 503`),
    counted by status in the order each first came, with the first and the newest answer."""

    counts: tuple[tuple[str, int], ...]
    first: EvidenceLine
    newest: EvidenceLine
    newest_status: str
    # the newest answer, where it came after the refusals (answers of a serving server are not each read)
    serving: tuple[EvidenceLine, str] | None = None

    @property
    def total(self) -> int:
        return sum(count for _, count in self.counts)

    def summary(self) -> str:
        """`131 answers, all 503 (lines 262–392)`; of several statuses, each counted and the newest named."""
        total = self.total
        answers = f"{total} answer{'s' * (total != 1)}"
        same_file = self.first.path == self.newest.path
        where = (
            f"line {self.first.line}"
            if same_file and self.first.line == self.newest.line
            else f"lines {self.first.line}–{self.newest.line}"
            if same_file
            else f"{self.first.path}:{self.first.line} to {self.newest.path}:{self.newest.line}"
        )
        then = ""
        if self.serving is not None:
            line, status = self.serving
            at = f"line {line.line}" if line.path == self.newest.path else f"{line.path}:{line.line}"
            then = f"; then {status} ({at})"
        if len(self.counts) == 1:
            return f"{answers}, {'all ' if total > 1 else ''}{self.newest_status} ({where}){then}"
        each = ", ".join(f"{count} × {status}" for status, count in self.counts)
        return f"{answers}: {each} ({where}); the newest {self.newest_status}{then}"

    def to_json(self) -> dict[str, Any]:
        return {
            "answers": dict(self.counts),
            "first": {"path": self.first.path, "line": self.first.line},
            "newest": {"path": self.newest.path, "line": self.newest.line, "status": self.newest_status},
            "serving": None
            if self.serving is None
            else {"path": self.serving[0].path, "line": self.serving[0].line, "status": self.serving[1]},
        }


@dataclass(frozen=True)
class UnknownTemplate:
    """Lines no rule knows, as one template (numbers, paths, ids masked): how many, and one of them."""

    template: str
    count: int
    line: int
    example: str


@dataclass(frozen=True)
class RootCause:
    line: int
    text: str
    rule: str
    rank: str | None
    path: str
    context: tuple[ContextLine, ...] = ()
    time: datetime | None = None  # the line's stamp, or the last one before it (the picture marks it)


@dataclass(frozen=True, slots=True)
class SpanRow:
    phase: Phase
    rank: str | None
    draft: bool
    path: str
    start_line: int
    end_line: int
    start: datetime | None
    end: datetime | None
    seconds: float | None
    ended: bool
    progress: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class RankRow:
    """Where one rank stands: the phase it reached and its last progress."""

    rank: str
    reached: Phase
    current: Phase
    last_progress_line: int | None
    last_progress: datetime | None
    last_progress_path: str | None = None  # the log of that line (a run of several logs: a node's)


@dataclass(frozen=True)
class LastLine:
    line: int
    text: str
    time: datetime | None
    path: str


@dataclass(frozen=True)
class NextStep:
    """What to do next for this verdict (a pack's `[[next]]` entry, its placeholders filled): steps, or why none."""

    id: str
    steps: tuple[str, ...]
    why_none: str
    versions: str
    source: str


@dataclass(frozen=True)
class Report:
    inputs: tuple[InputSummary, ...]
    system: str | None
    version: str | None
    ranks: tuple[str, ...]
    phase: Phase | None
    furthest_phase: Phase | None
    verdict: Verdict
    reason: str
    culprit_ranks: tuple[str, ...]
    root_cause: RootCause | None
    phases: tuple[SpanRow, ...]
    last_line: LastLine | None
    as_of: datetime
    post_mortem: bool
    silence_s: float | None
    budget_s: float | None
    rank_rows: tuple[RankRow, ...] = ()
    baseline: BaselineSection | None = None
    stacks: StacksSection | None = None
    flight_recorder: FlightSection | None = None
    notes: tuple[str, ...] = field(default=())
    last_write: datetime | None = None  # the newest input file's modification time (stands in for time)
    confidence: str = "high"  # high | medium | low: how far the evidence carries the verdict
    support: tuple[EvidenceLine, ...] = ()  # the lines the verdict rests on
    doubts: tuple[str, ...] = ()  # what speaks against it, said, never silently resolved
    unrecognised: tuple[UnknownTemplate, ...] = ()  # when nothing was recognised: what the packs missed
    next_step: NextStep | None = None  # what to do next (the packs' `[[next]]`)
    ranks_not_followed: int = 0  # ranks counted in `ranks` whose phases are not in `phases` nor `rank_rows`
    health: HealthAnswers | None = None  # the health route's answers in the log, where it has any
    nodes: NodesSection | None = None  # the nodes a cluster's engine collected the logs from

    @property
    def exit_code(self) -> ExitCode:
        """docs/design.md §6: from the verdict and how far the evidence carries it (judging/exits.py),
        the same for analyze, watch and bundle."""
        from logphase.judging.confidence import Confidence  # judging's, imported where an exit is asked
        from logphase.judging.exits import exit_code

        return exit_code(self.verdict, Confidence(self.confidence))

    @property
    def last_line_age_s(self) -> float | None:
        if self.last_line is None or self.last_line.time is None:
            return None
        age = (self.as_of - self.last_line.time).total_seconds()
        return age if age >= 0 else None  # a line stamped after as_of (clocks apart): no negative age

    def to_json(self) -> dict[str, Any]:
        root = self.root_cause
        return {
            "schema": SCHEMA,
            "inputs": [{"path": i.path, "lines": i.lines, "bytes": i.bytes} for i in self.inputs],
            "system": self.system,
            "version": self.version,
            "ranks": list(self.ranks),
            "phase": _value(self.phase),
            "furthest_phase": _value(self.furthest_phase),
            "verdict": self.verdict.value,
            "reason": self.reason,
            "culprit_ranks": list(self.culprit_ranks),
            "root_cause": None
            if root is None
            else {
                "line": root.line,
                "text": root.text,
                "rule": root.rule,
                "rank": root.rank,
                "path": root.path,
                "time": _time(root.time),
                "context": [{"line": c.line, "text": c.text} for c in root.context],
            },
            "phases": [
                {
                    "phase": span.phase.value,
                    "rank": span.rank,
                    "draft": span.draft,
                    "path": span.path,
                    "start_line": span.start_line,
                    "end_line": span.end_line,
                    "start": _time(span.start),
                    "end": _time(span.end),
                    "seconds": span.seconds,
                    "ended": span.ended,
                    "progress": dict(span.progress) if span.progress else None,
                }
                for span in self.phases
            ],
            "rank_states": [
                {
                    "rank": row.rank,
                    "reached": row.reached.value,
                    "current": row.current.value,
                    "last_progress_line": row.last_progress_line,
                    "last_progress": _time(row.last_progress),
                    "last_progress_path": row.last_progress_path,
                }
                for row in self.rank_rows
            ],
            "ranks_not_followed": self.ranks_not_followed,
            "health": self.health.to_json() if self.health is not None else None,
            "last_line": None
            if self.last_line is None
            else {
                "line": self.last_line.line,
                "text": self.last_line.text,
                "time": _time(self.last_line.time),
                "path": self.last_line.path,
            },
            "as_of": _time(self.as_of),
            "post_mortem": self.post_mortem,
            "silence_s": self.silence_s,
            "budget_s": self.budget_s,
            "baseline": _section(self.baseline),
            "stacks": _section(self.stacks),
            "flight_recorder": _section(self.flight_recorder),
            "nodes": _section(self.nodes),
            "notes": list(self.notes),
            "confidence": self.confidence,
            "evidence": {
                "for": [{"path": e.path, "line": e.line, "text": e.text} for e in self.support],
                "against": list(self.doubts),
            },
            "unrecognised": [
                {"template": t.template, "count": t.count, "line": t.line, "example": t.example}
                for t in self.unrecognised
            ],
            "next": None
            if self.next_step is None
            else {
                "id": self.next_step.id,
                "steps": list(self.next_step.steps),
                "why_none": self.next_step.why_none or None,
                "versions": self.next_step.versions or None,
                "source": self.next_step.source,
            },
        }


def _section(section: Section | None) -> dict[str, Any] | None:
    return section.to_json() if section is not None else None


def _value(phase: Phase | None) -> str | None:
    return phase.value if phase is not None else None


def _time(moment: datetime | None) -> str | None:
    return moment.isoformat(sep=" ") if moment is not None else None
