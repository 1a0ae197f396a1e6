"""The run store (SQLite) and comparisons with earlier runs: milestones, phase statistics, ETA, budgets."""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

from logphase.analysis import build_report, scan
from logphase.errors import StoreError, UsageError
from logphase.fingerprint import Fingerprint, LogIdentity, SourceTap
from logphase.logs.reader import LogSource, open_sources
from logphase.packs import PackSet
from logphase.phases import MAIN_PROCESS_PHASES, PROBLEM_VERDICTS, SUCCESS_VERDICTS, Phase, Verdict
from logphase.report.model import Report
from logphase.verdict import format_duration, judge

# Stalled when the silence in a phase exceeds BUDGET_FACTOR × p95 of that phase's duration in
# successful runs of the same setup (DESIGN.md §4.6). 3 × p95: a phase that is slow once in twenty
# runs still gets three times that before it is called hung; a real hang still ends in a few
# multiples of the usual time instead of the pack's worst-case default (often 30 min).
BUDGET_FACTOR = 3.0
# Overdue (a warning, not a verdict): longer in the phase than OVERDUE_FACTOR × p90 of successful
# runs, and nothing moved for longer than the whole phase usually takes (p90).
OVERDUE_FACTOR = 2.0
# A budget learned from fewer runs is noise; with fewer, the pack default stays (the ETA, which only
# informs, is given from one run on).
MIN_RUNS_FOR_BUDGET = 3
# Phases that take a second (kv_cache) would get a budget of seconds: a GC pause is not a hang.
MIN_LEARNED_BUDGET_S = 60.0
# A ready run whose user label says otherwise is not a successful run.
PROBLEM_LABELS = frozenset(
    {"hung", "stalled", "stuck", "crashed", "aborted", "timeout", "failed", "bad", "oom", "killed"}
)

SCHEMA_VERSION = 1
APPLICATION_ID = 0x6C706873  # "lphs": marks a SQLite file as a logphase run store
BUSY_TIMEOUT_S = 30.0
LOCK_RETRIES = 8

_PHASES_WITHOUT_DURATION = frozenset({Phase.READY, Phase.SERVING})


# --- records ------------------------------------------------------------------------------------------


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

    @property
    def position(self) -> tuple[int, int, int]:
        """Milestones in startup order: comparable across log verbosity and TP sizes."""
        return (-1 if self.phase is None else self.phase.order, int(self.ended), int(self.draft_after))


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
    records.sort(key=lambda r: (r.start_s if r.start_s is not None else float("inf"), r.start_line))
    return tuple(records), origin


def stop_point(spans: Iterable[SpanLike], last_line: int) -> StopPoint:
    """The server's milestone (DESIGN.md §4.5): the main process's phase once it is past the
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


def run_from_report(report: Report, identity: LogIdentity, label: str | None = None) -> RunRecord:
    last = report.last_line
    return build_run(
        report.phases,
        verdict=report.verdict,
        lines=sum(i.lines for i in report.inputs),
        last_line=last.line if last else 0,
        last_text=last.text if last else "",
        paths=[i.path for i in report.inputs],
        identity=identity,
        label=label,
    )


# --- statistics over successful runs (pure) -------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default): 3 runs give a p90 near the max."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of nothing")
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class PhaseStats:
    phase: Phase
    runs: int
    median: float
    p90: float
    p95: float


def successful_pool(runs: Iterable[RunRecord], exclude_hash: str | None = None) -> list[RunRecord]:
    """Successful runs, each once, without the run being judged."""
    pool: dict[str, RunRecord] = {}
    for run in runs:
        if run.successful and run.content_hash != exclude_hash:
            pool.setdefault(run.content_hash, run)
    return list(pool.values())


def phase_stats(pool: Sequence[RunRecord]) -> dict[Phase, PhaseStats]:
    durations: dict[Phase, list[float]] = {}
    for run in pool:
        for record in run.phases:
            if record.seconds is not None and record.phase not in _PHASES_WITHOUT_DURATION:
                durations.setdefault(record.phase, []).append(record.seconds)
    return {
        phase: PhaseStats(
            phase, len(values), percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.95)
        )
        for phase, values in sorted(durations.items(), key=lambda item: item[0].order)
    }


def learned_budgets(stats: Mapping[Phase, PhaseStats]) -> dict[Phase, float]:
    """BUDGET_FACTOR × p95 per phase with enough successful runs (never under MIN_LEARNED_BUDGET_S)."""
    return {
        phase: max(MIN_LEARNED_BUDGET_S, BUDGET_FACTOR * s.p95)
        for phase, s in stats.items()
        if s.runs >= MIN_RUNS_FOR_BUDGET
    }


def budgets_with_baselines(defaults: Mapping[Phase, float], stats: Mapping[Phase, PhaseStats]) -> dict[Phase, float]:
    return {**defaults, **learned_budgets(stats)}


@dataclass(frozen=True)
class Eta:
    """Expected time until ready: the median over successful runs of (their time from this phase's
    start to ready) − (the time this run spent in the phase so far); never negative."""

    seconds: float
    low: float
    high: float
    runs: int


def estimate_eta(pool: Sequence[RunRecord], phase: Phase | None, in_phase_s: float | None) -> Eta | None:
    if phase is None or in_phase_s is None:
        return None
    remaining = []
    for run in pool:
        record = run.phase(phase)
        if record is None or record.start_s is None or run.ready_s is None:
            continue
        remaining.append(max(0.0, run.ready_s - record.start_s - in_phase_s))
    if not remaining:
        return None
    return Eta(percentile(remaining, 0.5), percentile(remaining, 0.1), percentile(remaining, 0.9), len(remaining))


# --- comparison (pure) ---------------------------------------------------------------------------------


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
    overdue: bool
    post_mortem: bool
    notes: tuple[str, ...] = ()

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
            "stop_point": None
            if reference is None
            else {
                "phase": _value(reference.stop.phase),
                "line": reference.stop.line,
                "milestone": reference.stop.milestone,
            },
            "this_point": {
                "phase": _value(self.this.stop.phase),
                "line": self.this.stop.line,
                "milestone": self.this.stop.milestone,
            },
            "passed_stop_point": self.passed_stop_point,
            "phases": self._phase_rows(),
            "runs": self.pool_size,
            "in_phase_s": _round(self.in_phase_s),
            "eta_s": _round(self.eta.seconds) if self.eta else None,
            "eta_range_s": [_round(self.eta.low), _round(self.eta.high)] if self.eta else None,
            "overdue": self.overdue,
            "learned_budgets": {phase.value: _round(seconds) for phase, seconds in self.budgets.items()},
            "summary": self.summary(),
        }

    def _phase_rows(self) -> list[dict[str, Any]]:
        phases = {record.phase for record in self.this.phases} | set(self.stats)
        rows = []
        current = self.this.stop.phase
        for phase in sorted(phases, key=lambda p: p.order):
            if phase in _PHASES_WITHOUT_DURATION:
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
            return f"at its stall point ({reference.stop.milestone})"
        return f"not yet at its stall point (this run is in {here})"

    def _timing_words(self) -> list[str]:
        phase = self.this.stop.phase
        stats = self.stats.get(phase) if phase else None
        if self.this.verdict in SUCCESS_VERDICTS or phase is None:
            return []
        if not self.pool_size:
            return ["no successful run of this setup is recorded, so no ETA (logphase runs add LOG)"]
        words = []
        if stats is not None and self.eta is not None:
            spread = (
                f" ({format_duration(self.eta.low)}–{format_duration(self.eta.high)})"
                if self.eta.high - self.eta.low >= 1
                else ""
            )
            if self.eta.high < 1:
                left = "they were ready by now" if not self.post_mortem else "it ran longer than they took to be ready"
            elif self.post_mortem:
                left = f"it ended {format_duration(self.eta.seconds)}{spread} before they are ready"
            else:
                left = f"{format_duration(self.eta.seconds)}{spread} left"
            words.append(f"successful runs spend {format_duration(stats.median)} in {phase}, {left}")
        elif stats is None:
            words.append(f"successful runs of this setup never spent time in {phase}")
        if self.overdue and stats is not None:
            words.append(
                f"overdue: {format_duration(self.in_phase_s)} in {phase}, "
                f"where successful runs take at most {format_duration(stats.p90)} (p90)"
            )
        return words


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
    eta = None if finished else estimate_eta(pool, phase, in_phase_s)
    phase_stat = stats.get(phase) if phase else None
    overdue = bool(
        not finished
        and phase_stat is not None
        and in_phase_s is not None
        and in_phase_s > OVERDUE_FACTOR * phase_stat.p90
        and (silence_s is None or silence_s > phase_stat.p90)
    )
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
        overdue=overdue,
        post_mortem=post_mortem,
        notes=tuple(notes),
    )


def in_phase_seconds(run: RunRecord, now: datetime | None) -> float | None:
    """How long the run has been in the phase it stopped in, as of `now` (log time)."""
    record = run.phase(run.stop.phase) if run.stop.phase else None
    if record is None or record.start_s is None or run.started is None or now is None:
        return None
    return max(0.0, (now - (run.started + timedelta(seconds=record.start_s))).total_seconds())


def _describe(run: RunRecord) -> str:
    if run.label:
        label = run.label.lower()
        return "the run that hung" if label in ("hung", "stuck") else f"the run labelled {run.label!r}"
    return {
        Verdict.STALLED: "the run that hung",
        Verdict.CRASHED: "the run that crashed",
        Verdict.ABORTED: "the run that aborted",
        Verdict.TIMEOUT: "the run that timed out",
        Verdict.READY: "the run that was ready",
        Verdict.FINISHED: "the run that finished",
        Verdict.PROGRESSING: "the run that was still starting",
    }.get(run.verdict, "the earlier run")


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def _value(phase: Phase | None) -> str | None:
    return None if phase is None else phase.value


# --- analysis against a baseline (library entry point) ----------------------------------------------


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
        report = replace(report, baseline=comparison)
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


# --- the run store (SQLite) ------------------------------------------------------------------------------

_FINGERPRINT_COLUMNS = tuple(field.name for field in fields(Fingerprint))


def _column_type(name: str) -> str:
    return "INTEGER" if name.endswith(("_size", "_count")) else "TEXT"


_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 0 → 1
    (
        f"""CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            content_hash TEXT NOT NULL UNIQUE,
            head_hash TEXT NOT NULL,
            paths TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            fingerprint_key TEXT NOT NULL,
            {", ".join(f"{name} {_column_type(name)}" for name in _FINGERPRINT_COLUMNS)},
            verdict TEXT NOT NULL,
            label TEXT,
            lines INTEGER NOT NULL,
            stop_phase TEXT,
            stop_ended INTEGER NOT NULL,
            stop_draft_after INTEGER NOT NULL,
            stop_line INTEGER NOT NULL,
            last_text TEXT NOT NULL,
            started TEXT,
            ready_s REAL
        )""",
        "CREATE INDEX runs_by_fingerprint ON runs (fingerprint_key)",
        """CREATE TABLE phases (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            phase TEXT NOT NULL,
            start_s REAL,
            seconds REAL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            ended INTEGER NOT NULL,
            PRIMARY KEY (run_id, phase)
        )""",
    ),
)
assert len(_MIGRATIONS) == SCHEMA_VERSION

T = TypeVar("T")


class RunStore:
    """Recorded runs in one SQLite file. Safe for many processes at once (WAL, a busy timeout and
    retries); a file that is not a logphase store, or is damaged, is reported and never written."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    @classmethod
    def open(cls, path: Path, *, create: bool) -> RunStore:
        if path.is_dir():
            raise StoreError(
                f"{path}: is a directory, not a run store", hint="point --db or LOGPHASE_DB at a file, e.g. runs.db"
            )
        if not path.exists():
            if not create:
                raise StoreError(
                    f"no run store at {path}",
                    hint="record runs first (logphase runs add LOG, or analyze/watch --record), "
                    "or point --db / LOGPHASE_DB at the store",
                )
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create {path.parent}: {exc.strerror}", hint="use --db to put the store somewhere writable"
                ) from None
        try:
            connection = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(
                f"{path}: cannot open the run store: {exc}", hint="check the path and its permissions, or use --db"
            ) from None
        store = cls(path, connection)
        try:
            store._retry(store._prepare)
        except BaseException:
            connection.close()
            raise
        return store

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _prepare(self) -> None:
        """Check that the file is ours before anything is written to it; then migrate."""
        db = self._db
        application_id, version, objects = self._header()
        if application_id != APPLICATION_ID and (application_id != 0 or objects):
            raise StoreError(
                f"{self.path}: not a logphase run store (a SQLite database of something else)",
                hint="it was left untouched: point --db or LOGPHASE_DB at another file",
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: the run store has schema {version}, this logphase knows up to {SCHEMA_VERSION}",
                hint="upgrade logphase, or use another store with --db (the file was left untouched)",
            )
        if version < SCHEMA_VERSION:
            db.execute("BEGIN IMMEDIATE")
            try:
                application_id, version, objects = self._header()  # another process may have migrated meanwhile
                if application_id != APPLICATION_ID and (application_id != 0 or objects):
                    raise StoreError(
                        f"{self.path}: not a logphase run store", hint="it was left untouched: use another --db"
                    )
                for step in range(version, SCHEMA_VERSION):
                    for statement in _MIGRATIONS[step]:
                        db.execute(statement)
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")

    def _header(self) -> tuple[int, int, int]:
        """(application id, schema version, number of tables…), read in one snapshot: read one by
        one, another process's migration could commit in between and make our store look foreign."""
        db = self._db
        own = not db.in_transaction
        if own:
            db.execute("BEGIN")
        try:
            objects = int(db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
            application_id = int(db.execute("PRAGMA application_id").fetchone()[0])
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
        finally:
            if own:
                db.execute("COMMIT")
        return application_id, version, objects

    def _retry(self, action: Callable[[], T]) -> T:
        """SQLite's busy timeout covers most contention; a lock upgrade that would deadlock fails at
        once instead, so those are retried with a jittered backoff."""
        for attempt in range(LOCK_RETRIES + 1):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if ("locked" in text or "busy" in text) and attempt < LOCK_RETRIES:
                    time.sleep(0.02 * 2**attempt * (1 + random.random()))
                    continue
                raise self._store_error(exc) from None
            except sqlite3.DatabaseError as exc:
                raise self._store_error(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _store_error(self, exc: sqlite3.Error) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StoreError(
                f"{self.path}: the run store stayed locked: {text}", hint="another logphase holds it; try again"
            )
        if "readonly" in text.replace(" ", "") or "read-only" in text:
            return StoreError(f"{self.path}: the run store is read-only", hint="use --db to point at a writable file")
        return StoreError(
            f"{self.path}: unreadable run store: {text}",
            hint="the file is damaged or not SQLite; it was left untouched: move it away, or use --db",
        )

    # -- writing

    def add(self, run: RunRecord, *, recorded_at: datetime) -> tuple[int, bool]:
        """Record a run → (its id, whether it is new). The same content is one run; a log that grew
        since it was recorded (same paths, same head) updates its run."""
        return self._retry(lambda: self._add(replace(run, recorded_at=recorded_at)))

    def _add(self, run: RunRecord) -> tuple[int, bool]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT id, label FROM runs WHERE content_hash = ?", (run.content_hash,)).fetchone()
            if row is None:
                row = db.execute(
                    "SELECT id, label FROM runs WHERE paths = ? AND head_hash = ? ORDER BY id DESC LIMIT 1",
                    (json.dumps(list(run.paths)), run.head_hash),
                ).fetchone()
            values = self._row_values(replace(run, label=run.label or (row[1] if row else None)))
            if row is None:
                columns = ", ".join(values)
                marks = ", ".join("?" for _ in values)
                run_id = int(
                    db.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})", tuple(values.values())).lastrowid or 0
                )
                created = True
            else:
                run_id = int(row[0])
                assignments = ", ".join(f"{column} = ?" for column in values)
                db.execute(f"UPDATE runs SET {assignments} WHERE id = ?", (*values.values(), run_id))
                db.execute("DELETE FROM phases WHERE run_id = ?", (run_id,))
                created = False
            db.executemany(
                "INSERT INTO phases (run_id, phase, start_s, seconds, start_line, end_line, ended) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (run_id, p.phase.value, p.start_s, p.seconds, p.start_line, p.end_line, int(p.ended))
                    for p in run.phases
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return run_id, created

    def remove(self, run_id: int) -> None:
        def action() -> int:
            return int(self._db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount)

        if self._retry(action) == 0:
            raise StoreError(f"no run {run_id} in {self.path}", hint="see the ids with: logphase runs list")

    # -- reading

    def get(self, run_id: int) -> RunRecord:
        runs = self._retry(lambda: self._select("WHERE id = ?", (run_id,)))
        if not runs:
            raise StoreError(f"no run {run_id} in {self.path}", hint="see the ids with: logphase runs list")
        return runs[0]

    def all(self) -> list[RunRecord]:
        return self._retry(lambda: self._select("", ()))

    def matching(self, fingerprint_key: str) -> list[RunRecord]:
        return self._retry(lambda: self._select("WHERE fingerprint_key = ?", (fingerprint_key,)))

    def _select(self, where: str, parameters: tuple[Any, ...]) -> list[RunRecord]:
        db = self._db
        db.execute("BEGIN")
        try:
            cursor = db.execute(f"SELECT * FROM runs {where} ORDER BY id", parameters)
            names = [column[0] for column in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            phases: dict[int, list[PhaseRecord]] = {}
            ids = [row["id"] for row in rows]
            for chunk_start in range(0, len(ids), 500):
                chunk = ids[chunk_start : chunk_start + 500]
                marks = ", ".join("?" for _ in chunk)
                for run_id, phase, start_s, seconds, start_line, end_line, ended in db.execute(
                    "SELECT run_id, phase, start_s, seconds, start_line, end_line, ended FROM phases "
                    f"WHERE run_id IN ({marks})",
                    chunk,
                ):
                    phases.setdefault(run_id, []).append(
                        PhaseRecord(Phase(phase), start_s, seconds, start_line, end_line, bool(ended))
                    )
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
        return [self._record(row, phases.get(row["id"], [])) for row in rows]

    @staticmethod
    def _row_values(run: RunRecord) -> dict[str, Any]:
        fingerprint = run.fingerprint
        return {
            "content_hash": run.content_hash,
            "head_hash": run.head_hash,
            "paths": json.dumps(list(run.paths)),
            "recorded_at": (run.recorded_at or datetime.min).isoformat(sep=" ", timespec="seconds"),
            "fingerprint_key": fingerprint.key,
            **{name: getattr(fingerprint, name) for name in _FINGERPRINT_COLUMNS},
            "verdict": run.verdict.value,
            "label": run.label,
            "lines": run.lines,
            "stop_phase": _value(run.stop.phase),
            "stop_ended": int(run.stop.ended),
            "stop_draft_after": int(run.stop.draft_after),
            "stop_line": run.stop.line,
            "last_text": run.last_text,
            "started": run.started.isoformat(sep=" ") if run.started else None,
            "ready_s": run.ready_s,
        }

    @staticmethod
    def _record(row: Mapping[str, Any], phases: list[PhaseRecord]) -> RunRecord:
        phases.sort(key=lambda r: (r.start_s if r.start_s is not None else float("inf"), r.start_line))
        return RunRecord(
            fingerprint=Fingerprint(**{name: row[name] for name in _FINGERPRINT_COLUMNS}),
            verdict=Verdict(row["verdict"]),
            phases=tuple(phases),
            lines=row["lines"],
            stop=StopPoint(
                Phase(row["stop_phase"]) if row["stop_phase"] else None,
                bool(row["stop_ended"]),
                row["stop_line"],
                bool(row["stop_draft_after"]),
            ),
            last_text=row["last_text"],
            paths=tuple(json.loads(row["paths"])),
            content_hash=row["content_hash"],
            head_hash=row["head_hash"],
            started=datetime.fromisoformat(row["started"]) if row["started"] else None,
            ready_s=row["ready_s"],
            label=row["label"],
            id=row["id"],
            recorded_at=datetime.fromisoformat(row["recorded_at"]),
        )
