"""Runs the log pipeline over opened sources and assembles the `analyze` Report (library entry point)."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import chain, islice

from logphase.flight_recorder import FlightReport
from logphase.logs.matcher import SourceMatcher
from logphase.logs.prefilter import FastLines, plan_for
from logphase.logs.reader import Line, LogSource, envelopes_of, read_lines
from logphase.logs.timeline import PhaseSpan, Timeline, TimelineBuilder
from logphase.packs import PackSet
from logphase.phases import FAILURE_KINDS, Phase, Verdict
from logphase.report.model import ContextLine, InputSummary, LastLine, RankRow, Report, RootCause, SpanRow
from logphase.stacks.dumps import TRIGGER, DumpParser
from logphase.stacks.model import ProcessSnapshot
from logphase.stacks.stalls import summarize
from logphase.verdict import Judgement, judge

# Year-less stamps (vLLM's `INFO 03-07 09:19:58`) before the first dated line take its year.
YEAR_LOOKAHEAD = 500
CONTEXT_BEFORE = 2
CONTEXT_AFTER = 3
# Only the first failures keep their context: the root cause is among them.
MAX_CONTEXTS = 200


@dataclass
class _Context:
    event_key: tuple[int, int]
    lines: list[ContextLine]
    wanted_after: int = CONTEXT_AFTER


@dataclass
class ScanResult:
    """What one pass over the sources leaves: the timeline and what the report quotes."""

    timeline: Timeline
    last_lines: dict[int, tuple[Line, datetime | None]] = field(default_factory=dict)
    contexts: dict[tuple[int, int], tuple[ContextLine, ...]] = field(default_factory=dict)
    dumps: list[ProcessSnapshot] = field(default_factory=list)


def scan(sources: list[LogSource], packs: PackSet, as_of: datetime, *, fast: bool = True) -> ScanResult:
    """One streaming pass: read, match and build the timeline; remember a little context around
    failures and around the latest phase event (the root cause of a stall). `fast`: the matcher
    sees only the lines that can change the result (logs/prefilter.py); the result is the same."""
    builder = TimelineBuilder()
    result = ScanResult(timeline=builder.finish())
    failures_kept = 0
    plan = plan_for(packs, (TRIGGER,))
    for index, source in enumerate(sources):
        # the fast path reads bytes itself: a source in an envelope (docker, journald, a paste) takes the plain one
        fast_here = fast and plan.enabled and not envelopes_of(source)
        filtered = FastLines(source, plan, as_of, plain_head=YEAR_LOOKAHEAD) if fast_here else None
        lines = iter(filtered) if filtered is not None else read_lines(source)
        head = list(islice(lines, YEAR_LOOKAHEAD))
        matcher = SourceMatcher(packs, as_of, year=_first_year(head, packs))
        dumps = DumpParser()  # faulthandler / py-spy dumps printed into the log
        if filtered is not None:
            filtered.attach(matcher, dumps)
        before: deque[ContextLine] = deque(maxlen=CONTEXT_BEFORE)
        waiting: list[_Context] = []
        latest: _Context | None = None
        last: Line | None = None
        for line in chain(head, lines):
            last = line
            dumps.feed(line.text, writer=line.rank)
            here = ContextLine(line.number, line.text)
            for pending in waiting:
                if pending.lines[-1].line != line.number:  # one context line per physical line
                    pending.lines.append(here)
                    pending.wanted_after -= 1
            for event in matcher.match_line(line):
                builder.add(event)
                if event.line != line.number:
                    continue  # a frame group's event, held back until its group ended
                if event.kind in FAILURE_KINDS and failures_kept < MAX_CONTEXTS:
                    failures_kept += 1
                    waiting.append(_Context((index, line.number), [*before, here]))
                elif event.phase is not None and event.kind not in FAILURE_KINDS:
                    if latest is not None:
                        result.contexts.pop(latest.event_key, None)
                        if latest in waiting:
                            waiting.remove(latest)
                    latest = _Context((index, line.number), [*before, here])
                    waiting.append(latest)
            if before and before[-1].line == line.number:
                before[-1] = here
            else:
                before.append(here)
            if any(pending.wanted_after <= 0 for pending in waiting):
                for pending in waiting:
                    if pending.wanted_after <= 0:
                        result.contexts[pending.event_key] = tuple(pending.lines)
                waiting = [pending for pending in waiting if pending.wanted_after > 0]
        for event in matcher.finish():
            builder.add(event)
        if filtered is not None:
            builder.events += filtered.stats.skipped_events  # steady events counted, not read
            builder.systems.update(filtered.stats.skipped_systems)
        builder.see_ranks(matcher.ranks_seen)
        for pending in waiting:
            result.contexts[pending.event_key] = tuple(pending.lines)
        if last is not None:
            result.last_lines[index] = (last, matcher.last_time)
        result.dumps.extend(dumps.finish())
    result.timeline = builder.finish()
    return result


def _first_year(lines: list[Line], packs: PackSet) -> int | None:
    for line in lines:
        fields, _ = packs.split_prefix(line.text)
        if fields.time is not None and fields.time_has_year:
            return fields.time.year
        if line.stamp is not None:
            return line.stamp.year  # the envelope's year, where the line's own stamp has none
    return None


def analyze(
    sources: list[LogSource],
    packs: PackSet,
    *,
    as_of: datetime,
    post_mortem: bool,
    budgets: Mapping[Phase, float] | None = None,
) -> Report:
    """Read every source once and judge the run as of `as_of`."""
    result = scan(sources, packs, as_of)
    timeline = result.timeline
    chosen_budgets = dict(budgets) if budgets is not None else packs.budgets(timeline.system)
    last_activity = _last_write(sources)
    judgement = judge(
        timeline, as_of=as_of, post_mortem=post_mortem, budgets=chosen_budgets, last_activity=last_activity
    )
    report = build_report(sources, result, judgement, as_of=as_of, post_mortem=post_mortem)
    if result.dumps:
        # stack dumps printed into the log (SGLang's watchdog py-spy, faulthandler): merged as `stacks`
        report = replace(report, stacks=summarize(result.dumps, packs.signatures).to_json())
    return report


def with_flight_recorder(report: Report, flight: FlightReport) -> Report:
    """The flight recorder's finding in the report; the ranks it names missing from a collective
    are the culprits when the logs named none, and a note when the logs named others."""
    culprits = report.culprit_ranks
    notes = list(report.notes)
    missing = flight.missing
    if missing and not culprits:
        culprits = missing
        notes.append(f"culprit ranks from the flight recorder: {', '.join(missing)}")
    elif missing and set(missing) != set(culprits):
        notes.append(f"the flight recorder names {', '.join(missing)} missing from a collective")
    reason = report.reason
    if not report.inputs and report.verdict is Verdict.UNKNOWN:
        reason = "no log given; see the flight recorder"
    return replace(report, flight_recorder=flight.to_json(), culprit_ranks=culprits, notes=tuple(notes), reason=reason)


def build_report(
    sources: list[LogSource], result: ScanResult, judgement: Judgement, *, as_of: datetime, post_mortem: bool
) -> Report:
    timeline = result.timeline
    names = [source.name for source in sources]
    root = judgement.root_cause
    return Report(
        inputs=tuple(InputSummary(s.name, s.lines, s.bytes) for s in sources),
        system=timeline.system,
        version=timeline.version,
        ranks=tuple(state.rank for state in timeline.ranks if state.rank is not None),
        phase=judgement.phase,
        furthest_phase=judgement.furthest_phase,
        verdict=judgement.verdict,
        reason=judgement.reason,
        culprit_ranks=judgement.culprit_ranks,
        root_cause=None
        if root is None
        else RootCause(
            line=root.line,
            text=root.text,
            rule=root.rule.id,
            rank=root.rank,
            path=names[root.source],
            context=result.contexts.get((root.source, root.line), ()),
        ),
        phases=tuple(_span_row(span, names) for span in timeline.spans),
        rank_rows=tuple(
            RankRow(
                rank=state.rank,
                reached=state.reached,
                current=state.current,
                last_progress_line=state.last_progress.line if state.last_progress else None,
                last_progress=state.last_progress.time if state.last_progress else None,
            )
            for state in timeline.ranks
            if state.rank is not None
        ),
        last_line=_last_line(result, names),
        notes=tuple(f"{s.name}: {note}" for s in sources if s.envelopes for note in s.envelopes.notes()),
        as_of=as_of,
        post_mortem=post_mortem,
        silence_s=judgement.silence_s,
        budget_s=judgement.budget_s,
    )


def _span_row(span: PhaseSpan, names: list[str]) -> SpanRow:
    progress = span.progress
    return SpanRow(
        phase=span.phase,
        rank=span.rank,
        draft=span.draft,
        path=names[span.source],
        start_line=span.start_line,
        end_line=span.end_line,
        start=span.start,
        end=span.end,
        seconds=span.seconds,
        ended=span.ended,
        progress=None
        if progress is None
        else {"done": progress.done, "total": progress.total, "rate_per_s": progress.rate_per_s},
    )


def _last_line(result: ScanResult, names: list[str]) -> LastLine | None:
    if not result.last_lines:
        return None
    index, (line, when) = max(result.last_lines.items(), key=lambda item: (item[1][1] or datetime.min, item[0]))
    return LastLine(line.number, line.text, when, names[index])


def _last_write(sources: list[LogSource]) -> datetime | None:
    times = [s.modified for s in sources if s.modified is not None]
    return datetime.fromtimestamp(max(times)) if times else None
