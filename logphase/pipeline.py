"""The one assembly of a run's analysis: scan → judge → report → evidence → run record → baseline.

`analyze` (plain: `report`; --baseline, --record: `run`), `runs add` and baseline logs go through
`assemble`; `watch` feeds the same SourceFeed line by line and builds its final report with it."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, overload

from logphase.baselines.stats import in_phase_seconds, phase_stats, successful_pool
from logphase.bounded import read_int
from logphase.errors import StoreError, UsageError
from logphase.jobs import ONE_JOB, Jobs
from logphase.judging.budgets import Budgets, budgets_from
from logphase.judging.confidence import assess
from logphase.judging.evidence import Evidence, weigh_culprits
from logphase.judging.logs import EXCEPTION_LINE, MIXED_HINT, judge, mixed_runs, visible_ranks
from logphase.logs.matcher import Event
from logphase.logs.reader import ContextLine, LogSource, changes, open_sources
from logphase.logs.timeline import PhaseSpan, Timeline
from logphase.packs import PackSet
from logphase.phases import Verdict
from logphase.ranks import format_rank_set
from logphase.report.model import (
    EvidenceLine,
    HealthAnswers,
    InputSummary,
    LastLine,
    NextStep,
    RankRow,
    Report,
    RootCause,
    SpanRow,
    UnknownTemplate,
)
from logphase.scan import ScanResult, scan

if TYPE_CHECKING:  # types only: what a plain `analyze` does not run is not imported (start-up time)
    from logphase.baselines.compare import Comparison
    from logphase.baselines.fingerprint import LogIdentity
    from logphase.baselines.records import RunRecord
    from logphase.baselines.store import RunStore
    from logphase.flight_recorder import FlightReport
    from logphase.judging.live import LiveDecision
    from logphase.report.sections import NodesSection
    from logphase.scan.view import LineView
    from logphase.stacks.model import StacksReport


@dataclass(frozen=True)
class Options:
    """How to judge a run, and what to judge it with besides its logs."""

    as_of: datetime  # now for a live log; dates year-less stamps
    post_mortem: bool  # the log is finished: ending mid-startup is a stall
    baseline: str | None = None  # compare with: a run id, "auto" or the path of an earlier log
    store: RunStore | None = None  # the run store, when there is one
    store_error: StoreError | None = None  # why it could not be opened, for a baseline that does not need it
    label: str | None = None  # the outcome to record instead of the verdict
    flight: FlightReport | None = None  # torch flight-recorder dumps given with the logs
    stacks: StacksReport | None = None  # the live stacks of the server's processes (--pid)
    live: LiveDecision | None = None  # watch's decision (health, process, arrival times): judging/live.py
    stall_after_s: float | None = None  # one silence budget for every phase (--stall-after)
    fast: bool | None = None  # the fast path over steady lines (logs/fast/); None: the scan picks; the same result
    jobs: Jobs = ONE_JOB  # processes that scan big logs (logs/fast/ranges.py); the same result
    caches: Path | None = None  # where the fast path keeps its scan plans and scanners (None: nowhere)
    tap: LineView | None = None  # shown every line the scan reads (the lines behind the verdict): the plain path
    # logs of two runs given together: refused (analyze); a bug report's bundle keeps them, with a note
    refuse_mixed: bool = True
    nodes: NodesSection | None = None  # the nodes a cluster's engine collected the logs from (nodes/logs.py)


def run(sources: list[LogSource], packs: PackSet, options: Options) -> tuple[Report, RunRecord]:
    """Read every source once, hashing it, and judge the run: the report and the run as it would be recorded."""
    from logphase.baselines.fingerprint import SourceTap  # hashing: only a recorded or compared run needs it

    tap = SourceTap(sources, packs.server_args)
    result = _scanned(tap.sources, sources, packs, options)
    identity = tap.identity(result.timeline.system, result.timeline.version)
    return assemble(_inputs(sources), result, packs, options, identity=identity, last_activity=_last_write(sources))


def report(sources: list[LogSource], packs: PackSet, options: Options) -> Report:
    """`run` for a report alone (plain `analyze`): without a run record the logs need no hashing,
    a tenth of the CPU of a pass. With a baseline to compare with, it is `run`."""
    if options.baseline is not None:
        return run(sources, packs, options)[0]
    result = _scanned(sources, sources, packs, options)
    return assemble(_inputs(sources), result, packs, options, identity=None, last_activity=_last_write(sources))[0]


def _scanned(read: list[LogSource], sources: list[LogSource], packs: PackSet, options: Options) -> ScanResult:
    """The one scan of `read` (the sources, or their hashing taps) with the options' runtime, and what changed
    in `sources` while they were read."""
    result = scan(
        read, packs, options.as_of, fast=options.fast, jobs=options.jobs, caches=options.caches, tap=options.tap
    )
    return _changed(result, sources)


@overload
def assemble(
    inputs: Sequence[InputSummary],
    result: ScanResult,
    packs: PackSet,
    options: Options,
    *,
    identity: LogIdentity,
    last_activity: datetime | None,
) -> tuple[Report, RunRecord]: ...


@overload
def assemble(
    inputs: Sequence[InputSummary],
    result: ScanResult,
    packs: PackSet,
    options: Options,
    *,
    identity: None,
    last_activity: datetime | None,
) -> tuple[Report, None]: ...


def assemble(
    inputs: Sequence[InputSummary],
    result: ScanResult,
    packs: PackSet,
    options: Options,
    *,
    identity: LogIdentity | None,
    last_activity: datetime | None,
) -> tuple[Report, RunRecord | None]:
    """A scanned run → its report, and its run record when the logs' identity is known (a baseline
    needs it). `last_activity` (a file's mtime) stands in for the time of the last progress when the
    log has no timestamps at all."""
    timeline = result.timeline
    mixed = mixed_runs(timeline, result.relaunched, [summary.path for summary in inputs])
    if mixed is not None and options.refuse_mixed:
        raise UsageError(mixed, hint=MIXED_HINT)
    baseline: Baseline | None = None
    if options.baseline is not None:
        if identity is None:
            raise ValueError("a baseline comparison needs the logs' identity")
        baseline = find_baseline(options.baseline, identity, packs, options)
    pool = baseline.pool if baseline is not None else []
    budgets = budgets_from(packs.budgets(timeline.system), phase_stats(pool), stall_after_s=options.stall_after_s)
    judgement = judge(
        timeline, as_of=options.as_of, post_mortem=options.post_mortem, budgets=budgets, last_activity=last_activity
    )
    if options.live is not None:
        from logphase.judging.live import weigh  # watch's decision: only `watch` has one

        judgement = weigh(judgement, options.live, timeline.last_progress)
    # the verdict is final here: its confidence is worked out for it, not for an earlier one
    assessment = assess(timeline, judgement, post_mortem=options.post_mortem, earlier_starts=len(result.earlier))
    stacks = options.stacks
    if stacks is None and result.dumps:
        from logphase.judging.stalls import summarize  # the stack model: only for a log with dumps in it

        stacks = summarize(result.dumps, packs.signatures)
    culprits = weigh_culprits(judgement.culprit_ranks, Evidence(live_stacks=options.stacks, flight=options.flight))
    earlier = _earlier_starts(result, budgets, options.as_of) if result.earlier else []
    reason = judgement.reason
    if not inputs and judgement.verdict is Verdict.UNKNOWN and options.flight is not None:
        reason = "no log given; see the flight recorder"
    unknown: tuple[UnknownTemplate, ...] = ()
    if judgement.verdict is Verdict.UNKNOWN and result.unrecognised is not None:
        unknown = tuple(UnknownTemplate(t.text, t.count, t.example_line, t.example) for t in result.unrecognised.top())
    names = [summary.path for summary in inputs]
    phases = tuple(_span_row(span, names) for span in timeline.spans)
    last_line = _last_line(result, names)
    run: RunRecord | None = None
    comparison: Comparison | None = None
    if identity is not None:
        from logphase.baselines.compare import compare  # a run record and its comparison: --record, --baseline
        from logphase.baselines.records import build_run

        run = build_run(
            phases,
            verdict=judgement.verdict,
            lines=sum(i.lines for i in inputs),
            last_line=last_line.line if last_line else 0,
            last_text=last_line.text if last_line else "",
            paths=names,
            identity=identity,
            label=options.label,
        )
        if baseline is not None:
            now = timeline.last_time if options.post_mortem else options.as_of
            comparison = compare(
                run,
                ref=baseline.ref,
                reference=baseline.reference,
                pool=pool,
                in_phase_s=in_phase_seconds(run, now),
                silence_s=judgement.silence_s,
                post_mortem=options.post_mortem,
                notes=baseline.notes,
            )
    root = judgement.root_cause
    entry = packs.next_steps(judgement.verdict, judgement.phase, timeline.system, root.rule.id if root else None)
    next_step = (
        None
        if entry is None
        else NextStep(
            entry.id,
            entry.filled(
                log=shlex.join(names) or "LOG",
                rank=format_rank_set(culprits.ranks) if culprits.ranks else (root.rank if root else None),
                phase=judgement.phase,
            ),
            entry.why_none,
            entry.versions,
            entry.source,
        )
    )
    report = Report(
        inputs=tuple(inputs),
        system=timeline.system,
        version=timeline.version,
        ranks=tuple(visible_ranks(timeline)),
        phase=judgement.phase,
        furthest_phase=judgement.furthest_phase,
        verdict=judgement.verdict,
        reason=reason,
        culprit_ranks=culprits.ranks,
        root_cause=None
        if root is None
        else RootCause(
            line=root.line,
            text=root.text,
            rule=root.rule.id,
            rank=root.rank,
            path=names[root.source],
            context=_context(result, root),
            time=root.time,
        ),
        phases=phases,
        rank_rows=tuple(
            RankRow(
                rank=state.rank,
                reached=state.reached,
                current=state.current,
                last_progress_line=state.last_progress.line if state.last_progress else None,
                last_progress=state.last_progress.time if state.last_progress else None,
                last_progress_path=names[state.last_progress.source] if state.last_progress else None,
            )
            for state in timeline.ranks
            if state.rank is not None
        ),
        last_line=last_line,
        notes=(*result.notes, *_dated_notes(timeline), *earlier, *culprits.notes, *([mixed] if mixed else [])),
        as_of=options.as_of,
        post_mortem=options.post_mortem,
        silence_s=judgement.silence_s,
        budget_s=judgement.budget_s,
        baseline=comparison,
        stacks=stacks,
        flight_recorder=options.flight,
        last_write=last_activity,
        confidence=assessment.confidence.value,
        support=tuple(EvidenceLine(names[e.source], e.line, e.text) for e in assessment.support),
        doubts=assessment.doubts,
        unrecognised=unknown,
        next_step=next_step,
        ranks_not_followed=timeline.unfollowed,
        health=_health(timeline, names),
        nodes=options.nodes,
    )
    return report, run


def _health(timeline: Timeline, names: Sequence[str]) -> HealthAnswers | None:
    """The health route's refusals (a warming server's 503s), counted by status, and its newest answer where
    that came after them (None: the log shows no refusal)."""
    first, newest, latest = timeline.health_first, timeline.health_last, timeline.health
    if first is None or newest is None or not timeline.health_answers:
        return None
    later = latest if latest is not None and latest.order_key > newest.order_key else None
    return HealthAnswers(
        counts=timeline.health_answers,
        first=EvidenceLine(names[first.source], first.line, first.text),
        newest=EvidenceLine(names[newest.source], newest.line, newest.text),
        newest_status=newest.captures.get("health_status", ""),
        serving=(EvidenceLine(names[later.source], later.line, later.text), later.captures.get("health_status", ""))
        if later is not None
        else None,
    )


def _dated_notes(timeline: Timeline) -> list[str]:
    """Which times were inferred: bar ticks with no stamp, dated by the bar's own elapsed time."""
    notes = []
    for dated in timeline.dated:
        who = f"{dated.rank}: " if dated.rank else ""
        lines = f"line {dated.first_line}" if dated.count == 1 else f"lines {dated.first_line}–{dated.last_line}"
        ticks = f"{dated.count} progress-bar tick{'s' * (dated.count != 1)}"
        notes.append(
            f"{who}the times of {ticks} ({lines}) inferred from the bar's own elapsed time: they carry no stamp"
        )
    return notes


@dataclass(frozen=True)
class Baseline:
    """What a run is compared with: the reference REF names, and the successful runs of its setup."""

    ref: str
    reference: RunRecord | None
    pool: list[RunRecord]  # successful runs, the judged one left out: the learned budgets' input
    notes: list[str]


def find_baseline(ref: str, identity: LogIdentity, packs: PackSet, options: Options) -> Baseline:
    """`ref` is a run id, `auto` (the latest stored run of this setup) or the path of an earlier log.
    A REF that is a path does not need the store; a store that could not be opened is then a note."""
    notes: list[str] = []
    reference: RunRecord | None = None
    stored: list[RunRecord] = []
    kind = reference_kind(ref)
    if kind != "path" and options.store is None:
        raise options.store_error or StoreError("no run store", hint="record runs first: logphase runs add LOG")
    if options.store is not None:
        stored = options.store.matching(identity.fingerprint.key)
    elif options.store_error is not None:
        notes.append(f"run store not used: {options.store_error.message}")
    if kind == "id":
        assert options.store is not None
        reference = options.store.get(int(ref))
    elif kind == "auto":
        earlier = [run for run in stored if run.content_hash != identity.content_hash]
        reference = max(earlier, key=lambda run: run.id or 0) if earlier else None
    else:
        reference = load_reference(ref, packs, options.as_of)
    pool = successful_pool([*stored, *([reference] if reference else [])], exclude_hash=identity.content_hash)
    return Baseline(ref, reference, pool, notes)


def reference_kind(ref: str) -> str:
    """What a --baseline REF names: `auto`, a run `id` or the `path` of an earlier log."""
    if ref == "auto":
        return "auto"
    if ref.isdigit():
        return "id"
    return "path"


def load_reference(path: str, packs: PackSet, as_of: datetime) -> RunRecord:
    """An earlier log, analysed on the fly as a finished run."""
    if not Path(path).exists():
        raise UsageError(
            f"--baseline {path!r}: not a run id, 'auto' or an existing log",
            hint="give a run id from `logphase runs list`, 'auto', or the path of an earlier log",
        )
    return run(open_sources([path], packs=packs), packs, Options(as_of=as_of, post_mortem=True))[1]


# --- the report's rows ----------------------------------------------------------------------------


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


def _changed(result: ScanResult, sources: list[LogSource]) -> ScanResult:
    """The scan's notes and what became of each file while it was read (grown, truncated)."""
    result.notes.extend(note for note in map(changes, sources) if note is not None)
    return result


def _inputs(sources: list[LogSource]) -> tuple[InputSummary, ...]:
    return tuple(InputSummary(s.name, s.lines, s.bytes) for s in sources)


def _last_write(sources: list[LogSource]) -> datetime | None:
    modified = [s.modified for s in sources if s.modified is not None]
    return datetime.fromtimestamp(max(modified)) if modified else None


def _context(result: ScanResult, root: Event) -> tuple[ContextLine, ...]:
    """The lines around the root cause, as the feed kept them for its line: a cause quoted at its statement (judging's
    `_stated_by_statement`) has the context of the exception line it stands for, a line or two below it."""
    stood_for = read_int(root.captures.get(EXCEPTION_LINE))
    line = stood_for if stood_for is not None else root.line
    return tuple(result.contexts.get((root.source, line), ()))


def _last_line(result: ScanResult, names: list[str]) -> LastLine | None:
    if not result.last_lines:
        return None
    index, (line, when) = max(result.last_lines.items(), key=lambda item: (item[1][1] or datetime.min, item[0]))
    return LastLine(line.number, line.text, when, names[index])


def _earlier_starts(result: ScanResult, budgets: Budgets, as_of: datetime) -> list[str]:
    """The starts a later start in the same log replaced: each judged as a finished log, listed;
    the report is the last start's."""
    notes = []
    for earlier in result.earlier:
        judged = judge(earlier.timeline, as_of=as_of, post_mortem=True, budgets=budgets)
        where = f" at {judged.phase}" if judged.phase else ""
        notes.append(
            f"an earlier start in this log (lines {earlier.first_line}-{earlier.last_line}) ended "
            f"{judged.verdict}{where}: {judged.reason}"
        )
    last = result.earlier[-1].last_line + 1
    notes.append(f"the server started again at line {last}: this report is that start's")
    return notes
