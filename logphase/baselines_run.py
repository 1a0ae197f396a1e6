"""Analysis against earlier runs, moved verbatim from baselines.py: runs the pipeline, so lives outside the package.

Temporary: pipeline.py replaces these four names (analyze_run, Analysed, load_reference, reference_kind), and
this module goes at that merge."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from logphase.analysis import build_report, scan
from logphase.baselines.compare import compare
from logphase.baselines.records import RunRecord, run_from_report
from logphase.baselines.stats import budgets_with_baselines, in_phase_seconds, phase_stats, successful_pool
from logphase.baselines.store import RunStore
from logphase.errors import StoreError, UsageError
from logphase.fingerprint import SourceTap
from logphase.logs.reader import LogSource, open_sources
from logphase.packs import PackSet
from logphase.report.model import Report
from logphase.verdict import judge


@dataclass(frozen=True)
class Analysed:
    report: Report
    run: RunRecord


def analyze_run(
    sources: list[LogSource],
    packs: PackSet,
    *,
    as_of: datetime,
    post_mortem: bool,
    ref: str | None = None,
    store: RunStore | None = None,
    store_error: StoreError | None = None,
    label: str | None = None,
) -> Analysed:
    """`analyze` with what baselines add: the run record (for --record), and with `ref` the
    comparison in `report.baseline` and budgets learned from successful runs of the same setup.

    `ref` is a run id, `auto` (the latest stored run of this setup) or the path of an earlier log.
    `store` is None when there is none; `store_error` says why it could not be opened, for a REF
    that does not need it."""
    tap = SourceTap(sources)
    result = scan(tap.sources, packs, as_of)
    timeline = result.timeline
    identity = tap.identity(timeline.system, timeline.version)
    notes: list[str] = []
    reference: RunRecord | None = None
    stored: list[RunRecord] = []
    if ref is not None:
        kind = reference_kind(ref)
        if kind != "path" and store is None:
            raise store_error or StoreError("no run store", hint="record runs first: logphase runs add LOG")
        if store is not None:
            stored = store.matching(identity.fingerprint.key)
        elif store_error is not None:
            notes.append(f"run store not used: {store_error.message}")
        if kind == "id":
            assert store is not None
            reference = store.get(int(ref))
        elif kind == "auto":
            earlier = [run for run in stored if run.content_hash != identity.content_hash]
            reference = max(earlier, key=lambda run: run.id or 0) if earlier else None
        else:
            reference = load_reference(ref, packs, as_of)
    pool = successful_pool([*stored, *([reference] if reference else [])], exclude_hash=identity.content_hash)
    stats = phase_stats(pool)
    budgets = budgets_with_baselines(packs.budgets(timeline.system), stats)
    modified = [s.modified for s in sources if s.modified is not None]
    judgement = judge(
        timeline,
        as_of=as_of,
        post_mortem=post_mortem,
        budgets=budgets,
        last_activity=datetime.fromtimestamp(max(modified)) if modified else None,
    )
    report = build_report(sources, result, judgement, as_of=as_of, post_mortem=post_mortem)
    run = run_from_report(report, identity, label)
    if ref is not None:
        now = timeline.last_time if post_mortem else as_of
        comparison = compare(
            run,
            ref=ref,
            reference=reference,
            pool=pool,
            in_phase_s=in_phase_seconds(run, now),
            silence_s=judgement.silence_s,
            post_mortem=post_mortem,
            notes=notes,
        )
        report = replace(report, baseline=comparison.to_json())
    return Analysed(report, run)


def reference_kind(ref: str) -> str:
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
    return analyze_run(open_sources([path]), packs, as_of=as_of, post_mortem=True).run
