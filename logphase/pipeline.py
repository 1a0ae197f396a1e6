"""The one assembly of a run's analysis: scan → judge → report → evidence → run record → baseline.

`analyze` (plain, --baseline, --record), `runs add` and the baseline logs themselves go through
`run`; `watch` feeds the same SourceFeed line by line and builds its final report with `assemble`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from logphase.baselines import (
    RunRecord,
    RunStore,
    compare,
    in_phase_seconds,
    phase_stats,
    run_from_report,
    successful_pool,
)
from logphase.errors import StoreError, UsageError
from logphase.fingerprint import LogIdentity, SourceTap
from logphase.flight_recorder import FlightReport
from logphase.judging.budgets import budgets_from
from logphase.judging.evidence import Evidence, WatchVerdict, with_evidence
from logphase.judging.logs import Judgement, judge
from logphase.logs.reader import LogSource, open_sources
from logphase.logs.timeline import PhaseSpan
from logphase.packs import PackSet
from logphase.report.model import InputSummary, LastLine, RankRow, Report, RootCause, SpanRow
from logphase.scanning import ScanResult, scan
from logphase.stacks.stalls import summarize


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
    watched: WatchVerdict | None = None  # watch's own verdict (health, process, arrival times)
    fast: bool = True  # the fast path over steady lines (logs/prefilter.py); the same result


def run(sources: list[LogSource], packs: PackSet, options: Options) -> tuple[Report, RunRecord]:
    """Read every source once and judge the run; the report and the run as it would be recorded."""
    tap = SourceTap(sources)
    result = scan(tap.sources, packs, options.as_of, fast=options.fast)
    identity = tap.identity(result.timeline.system, result.timeline.version)
    inputs = tuple(InputSummary(s.name, s.lines, s.bytes) for s in sources)
    modified = [s.modified for s in sources if s.modified is not None]
    last_write = datetime.fromtimestamp(max(modified)) if modified else None
    return assemble(inputs, result, packs, options, identity=identity, last_activity=last_write)


def assemble(
    inputs: Sequence[InputSummary],
    result: ScanResult,
    packs: PackSet,
    options: Options,
    *,
    identity: LogIdentity,
    last_activity: datetime | None,
) -> tuple[Report, RunRecord]:
    """A scanned run → its report and run record. `last_activity` (a file's mtime) stands in for the
    time of the last progress when the log has no timestamps at all."""
    timeline = result.timeline
    ref = options.baseline
    notes: list[str] = []
    reference: RunRecord | None = None
    stored: list[RunRecord] = []
    if ref is not None:
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
    budgets = budgets_from(packs.budgets(timeline.system), phase_stats(pool))
    judgement = judge(
        timeline, as_of=options.as_of, post_mortem=options.post_mortem, budgets=budgets, last_activity=last_activity
    )
    report = build_report(inputs, result, judgement, as_of=options.as_of, post_mortem=options.post_mortem)
    # stack dumps printed into the log (SGLang's watchdog py-spy, faulthandler): the report's `stacks`
    stacks = summarize(result.dumps, packs.signatures) if result.dumps else None
    report = with_evidence(report, Evidence(stacks=stacks, flight=options.flight, watched=options.watched))
    run = run_from_report(report, identity, options.label)
    if ref is not None:
        now = timeline.last_time if options.post_mortem else options.as_of
        comparison = compare(
            run,
            ref=ref,
            reference=reference,
            pool=pool,
            in_phase_s=in_phase_seconds(run, now),
            silence_s=judgement.silence_s,
            post_mortem=options.post_mortem,
            notes=notes,
        )
        report = replace(report, baseline=comparison.to_json())
    return report, run


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
    return run(open_sources([path]), packs, Options(as_of=as_of, post_mortem=True))[1]


# --- the report -----------------------------------------------------------------------------------


def build_report(
    inputs: Sequence[InputSummary], result: ScanResult, judgement: Judgement, *, as_of: datetime, post_mortem: bool
) -> Report:
    timeline = result.timeline
    names = [summary.path for summary in inputs]
    root = judgement.root_cause
    return Report(
        inputs=tuple(inputs),
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
