"""What every format shows of an `analyze` Report, worked out once: phase rows, rank rows, facts, findings."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath

from logphase.durations import format_duration
from logphase.phases import MAIN_PROCESS_PHASES, Phase, Verdict
from logphase.ranks import format_rank_set
from logphase.report.model import NextStep, Report, SpanRow
from logphase.report.sections import FlightSection


@dataclass(frozen=True)
class Table:
    """A table as every format lays it out: the column names and rows of text (no rows: not shown)."""

    headers: tuple[str, ...]
    rows: list[list[str]]


@dataclass(frozen=True)
class _PhaseRow:
    """One phase across the ranks that went through it."""

    phase: Phase
    draft: bool
    ranks: tuple[str | None, ...]
    start: datetime | None
    end: datetime | None
    progress: str
    first_line: int


@dataclass(frozen=True)
class Finding:
    """One line a section adds below the root cause (`Baseline: …`, `note: …`), the same in every format."""

    label: str
    text: str
    detail: str | None = None  # a second line: where the pending collective was issued


def findings(report: Report) -> list[tuple[Finding, ...]]:
    """What the health route's answers, the baseline, the in-log stacks, the flight recorder, the next steps and
    the notes say, one block each."""
    blocks: list[tuple[Finding, ...]] = []
    if report.health is not None:
        blocks.append((Finding("Health route", report.health.summary()),))
    if report.nodes is not None:
        blocks.append(_node_findings(report))
    if report.baseline is not None and (summary := report.baseline.summary()):
        blocks.append((Finding("Baseline", summary),))
    stall = report.stacks.stall if report.stacks is not None else None
    if stall is not None and stall.summary:
        blocks.append((Finding("Stacks in the log", stall.summary),))
    if report.flight_recorder is not None:
        blocks.append(_flight_findings(report.flight_recorder))
    if report.next_step is not None:
        blocks.append(_next_findings(report.next_step))
    if report.notes:
        blocks.append(tuple(Finding("note", note) for note in report.notes))
    return blocks


def _node_findings(report: Report) -> tuple[Finding, ...]:
    """The nodes the logs came from (those that gave none, with why), and the node of each culprit rank where the
    servers' global rank names do not say it."""
    assert report.nodes is not None
    found = [Finding("Nodes", line) for line in report.nodes.lines()]
    for rank in report.culprit_ranks[:8]:
        paths = {row.last_progress_path for row in report.rank_rows if row.rank == rank and row.last_progress_path}
        nodes = sorted({node for path in paths if (node := report.nodes.node_of(path)) is not None})
        if nodes and not rank.startswith(f"{nodes[0]}:"):
            found.append(Finding("Nodes", f"{rank} is on node {', '.join(nodes)}"))
    return tuple(found)


def _next_findings(step: NextStep) -> tuple[Finding, ...]:
    """`Next: <step>` a line each (the versions whose flags they name under the last), or why there is none."""
    if not step.steps:
        return (Finding("Next", step.why_none),)
    last = len(step.steps) - 1
    return tuple(
        Finding("Next", text, f"(flags and variables of {step.versions})" if i == last and step.versions else None)
        for i, text in enumerate(step.steps)
    )


def _flight_findings(flight: FlightSection) -> tuple[Finding, ...]:
    """The flight recorder's finding per process group, and where the pending collective was issued."""
    out = []
    for group in flight.groups:
        summary = group.summary()
        if not summary or group.pending is None:
            continue
        frames = group.pending.frames
        caller = next((frame for frame in frames if " (torch/" not in frame), None)  # past torch's own frames
        out.append(Finding("Flight recorder", summary, f"issued from {caller}" if caller else None))
    if not out:
        out.append(Finding("Flight recorder", f"{len(flight.dumps)} dump(s), no collective in flight"))
    return tuple(out)


def root_title(report: Report) -> str:
    return "Last progress" if report.verdict is Verdict.STALLED else "Root cause"


def headline(report: Report, verdict: str) -> str:
    """`logphase: STALLED at warmup — <reason>`: the reason without tqdm's padding and bar glyphs, the
    phase not said twice (`READY at ready — ready: …`), cut at HEADLINE_WIDTH between words."""
    where = verdict_place(report)
    reason = " ".join(_BAR_GLYPHS.sub("", report.reason).split())
    if report.phase is not None and reason.startswith(f"{report.phase}: "):
        reason = reason[len(f"{report.phase}: ") :]
    line = f"logphase: {verdict}{where} — {reason}"
    width = HEADLINE_WIDTH + len(verdict) - len(report.verdict.value)  # colour codes take no room
    if len(line) <= width:
        return line
    cut = line[: width - 1]
    space = cut.rfind(" ", len(line) - len(reason))  # within the reason: never mid-word
    return (cut[:space] if space > 0 else cut).rstrip(" ,;:—(") + "…"


def verdict_place(report: Report) -> str:
    """` at cuda_graph` after the verdict; nothing where it would repeat the verdict (`READY at ready`)."""
    if report.phase is None or report.phase.value == report.verdict.value:
        return ""
    return f" at {report.phase}"


# The headline is read at a glance: the whole reason stays in the JSON and in the markdown.
HEADLINE_WIDTH = 160
# tqdm's bar blocks: `▏▎▍▌▋▊▉█` and the ASCII `#`-less padding between them.
_BAR_GLYPHS = re.compile("[\u2588-\u258f]+")


def phase_table(report: Report) -> Table:
    """One row per phase (a draft model's apart), in the order the phases began."""
    rows = []
    for row in _phase_rows(report.phases):
        name = f"{row.phase.value} (draft)" if row.draft and row.phase is not Phase.DRAFT_INIT else row.phase.value
        took = format_duration((row.end - row.start).total_seconds()) if row.start and row.end else ""
        rows.append([name, format_rank_set(row.ranks), clock(row.start), clock(row.end), took, row.progress])
    return Table(("phase", "ranks", "start", "end", "took", "progress"), rows)


def _phase_rows(spans: Sequence[SpanRow]) -> list[_PhaseRow]:
    grouped: dict[tuple[Phase, bool], list[SpanRow]] = {}
    for span in spans:
        grouped.setdefault((span.phase, span.draft), []).append(span)
    rows = []
    for (phase, draft), members in grouped.items():
        starts = [s.start for s in members if s.start]
        ends = [s.end for s in members if s.end]
        rows.append(
            _PhaseRow(
                phase=phase,
                draft=draft,
                ranks=tuple(s.rank for s in members),
                start=min(starts) if starts else None,
                end=max(ends) if ends else None,
                progress=_bar_text(members),
                first_line=min(s.start_line for s in members),
            )
        )
    rows.sort(key=lambda r: (r.start or datetime.min, r.first_line))
    return rows


def _bar_text(members: Sequence[SpanRow]) -> str:
    bars = [s.progress for s in members if s.progress]
    if not bars:
        return ""
    bar = bars[-1]
    total = f"/{bar['total']}" if bar.get("total") else ""
    rate = f" ({bar['rate_per_s']}/s)" if bar.get("rate_per_s") else ""
    return f"{bar['done']}{total}{rate}"


# Ranks a culprit list names in full: the rest are counted (`and 195904 more ranks`).
LISTED_RANKS = 64


def rank_list(ranks: Sequence[str], quote: Callable[[str], str] = str) -> str:
    """`TP1, TP5, TP9`; past LISTED_RANKS, the first of them and `and N more ranks`."""
    listed = ", ".join(quote(rank) for rank in ranks[:LISTED_RANKS])
    more = len(ranks) - LISTED_RANKS
    return f"{listed} and {more} more ranks" if more > 0 else listed


def rank_table(report: Report) -> Table:
    """Per-rank rows, only when they tell something: culprits, or ranks in different phases
    before the main process took over (after that, every rank finished its init)."""
    headers = ("rank", "phase", "last progress", "line")
    rows = report.rank_rows
    if len({row.current for row in rows}) < 2 and not report.culprit_ranks:
        return Table(headers, [])
    if report.phase in MAIN_PROCESS_PHASES and not report.culprit_ranks:
        return Table(headers, [])
    listed = [
        [row.rank, row.current.value, clock(row.last_progress), str(row.last_progress_line or "")] for row in rows
    ]
    if report.ranks_not_followed:  # the timeline followed only the first ranks (logs/timeline.py MAX_RANKS)
        listed.append([f"and {report.ranks_not_followed} more ranks, not followed", "", "", ""])
    return Table(headers, listed)


def rank_title(table: Table) -> str:
    """`Ranks diverge` only where their phases do; the culprits' table alone is `Ranks`."""
    return "Ranks diverge" if len({row[1] for row in table.rows if row[1]}) > 1 else "Ranks"


def shareable_path(path: str) -> str:
    """A path to paste into an issue: a relative path as it is, an absolute one by its file name
    (`/home/alice/runs/server.log` says nothing to a reader, and names a user)."""
    return PurePath(path).name if PurePath(path).is_absolute() else path


def facts(report: Report, *, path: Callable[[str], str] = str) -> str:
    """The line under the headline: `sglang 0.5 · 8 ranks (TP[0-7]) · server.log: 392 lines · post-mortem`."""
    parts = []
    if report.system:
        parts.append(f"{report.system}{' ' + report.version if report.version else ''}")
    if report.ranks:
        count = len(report.ranks)
        parts.append(f"{count} rank{'s' * (count != 1)} ({format_rank_set(report.ranks)})")
    for summary in report.inputs:
        parts.append(f"{path(summary.path)}: {summary.lines} line{'s' * (summary.lines != 1)}")
    if report.last_line is not None:
        last = f"last line {report.last_line.line}"
        if report.last_line.time is not None:
            last += f" at {report.last_line.time:%Y-%m-%d %H:%M:%S}"
            age = report.last_line_age_s
            if not report.post_mortem and age is not None and age >= 0:
                last += f" ({format_duration(age)} ago)"
        parts.append(last)
    quiet = format_duration(report.silence_s) if report.silence_s is not None else "0s"
    if quiet != "0s" and report.verdict in (Verdict.PROGRESSING, Verdict.STALLED):
        # post-mortem, the silence is up to the log's end: a log that ends on its last progress has none to say
        if report.post_mortem:
            parts.append(f"last progress {quiet} before the end")
        else:
            parts.append(
                f"no progress for {quiet}"
                + (f" of a {format_duration(report.budget_s)} budget" if report.budget_s else "")
            )
    eta = report.baseline.headline_eta() if report.baseline is not None else None
    if eta:
        parts.append(eta)
    stamped = report.last_line is not None and report.last_line.time is not None
    if not report.post_mortem and not stamped and report.last_write is not None:
        # nothing in the log says when: its file's last write is the time of its last line
        parts.append(f"no timestamps: time from the file's last write, {report.last_write:%Y-%m-%d %H:%M:%S}")
    parts.append("post-mortem" if report.post_mortem else f"as of {report.as_of:%Y-%m-%d %H:%M:%S}")
    return " · ".join(parts)


def unrecognised_lines(report: Report) -> list[str]:
    """When nothing was recognised: the most frequent templates of the lines no rule knows."""
    if not report.unrecognised:
        return []
    out = ["Lines no rule knows (most frequent first; try one with `logphase patterns explain LINE`):"]
    out += [f"  {t.count:>5} × {t.template}   (e.g. line {t.line})" for t in report.unrecognised]
    return out


def confidence_line(report: Report) -> str | None:
    """`confidence: medium — <what speaks against the verdict>`; None when nothing does."""
    if report.confidence == "high":
        return None
    return f"confidence: {report.confidence} — {'; '.join(report.doubts)}"


def context(report: Report, *, marker: bool = True) -> list[str]:
    root = report.root_cause
    assert root is not None
    lines = root.context or ()
    if not lines:
        return [f"  > {root.line:>6} | {root.text}"]
    width = max(len(str(c.line)) for c in lines)
    return [f"  {'>' if c.line == root.line and marker else ' '} {c.line:>{width}} | {_clip(c.text)}" for c in lines]


def _clip(text: str, width: int = 220) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def clock(moment: datetime | None) -> str:
    return f"{moment:%H:%M:%S}" if moment else ""
