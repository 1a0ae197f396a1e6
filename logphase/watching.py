"""The live watch without I/O: lines in as they arrive → timeline; observations → transitions, status, exit."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from logphase.baselines.records import RunRecord, StopPoint, stop_point
from logphase.baselines.stats import MIN_RUNS_FOR_BUDGET, PhaseStats, estimate_eta, overdue_check
from logphase.durations import format_duration
from logphase.errors import ExitCode
from logphase.fingerprint import FingerprintCollector
from logphase.frames import TRIGGER
from logphase.health import Health, Probe
from logphase.judging.budgets import Budgets
from logphase.judging.live import LiveDecision, LiveFacts, decide, log_ready
from logphase.judging.logs import Judgement, judge
from logphase.logs.clocks import format_offset_notes, head_clock
from logphase.logs.fast import FollowRuns, plan_for
from logphase.logs.matcher import Event, SourceMatcher
from logphase.logs.reader import Line
from logphase.logs.stamps import ignored_stamp_notes
from logphase.logs.templates import TemplateMiner
from logphase.logs.timeline import Timeline, TimelineBuilder
from logphase.packs import PackSet
from logphase.phases import Phase, Verdict
from logphase.scanning import YEAR_LOOKAHEAD, ScanResult, SourceFeed

# lines/s is averaged over this many seconds: smooth enough to read, recent enough to mean "now".
RATE_WINDOW_S = 5.0


# --- incremental ingestion --------------------------------------------------------------------------


@dataclass
class Ingest:
    """Keeps one SourceFeed (the matcher, the timeline builder, dumps and contexts of `analyze`'s
    scan) and feeds it each new line once: the cost of a tick is the new lines, never the whole log.

    Times are of two clocks: the log's own stamps, and `arrived` (seconds on the watcher's
    monotonic clock when a batch came in). Silence is measured with differences within each
    clock only, so a log written in another time zone, or by a host with a skewed clock, is
    judged right; a live line is timed by its arrival, not by its whole-second stamp."""

    packs: PackSet
    reference: datetime  # dates year-less stamps (SourceMatcher)
    fast: bool = True  # steady runs summarised (logs/fast/ FollowRuns); same state either way
    name: str = "<stdin>"  # the log's, for the notes
    matcher: SourceMatcher = field(init=False)
    runs: FollowRuns | None = field(init=False)
    builder: TimelineBuilder = field(init=False)
    source: SourceFeed = field(init=False)
    scanned: ScanResult = field(init=False)
    fingerprint: FingerprintCollector = field(init=False)
    lines: int = 0
    skipped_lines: int = 0  # steady-run lines the matcher never read
    last_line: Line | None = None
    log_time: datetime | None = None  # the latest stamp seen in the log
    log_time_arrived: float | None = None
    progress: Event | None = None
    progress_arrived: float | None = None
    backlog: float = 0.0  # seconds of log time between the progress and the end of its batch
    _timeline: Timeline | None = None
    _judgement: Judgement | None = None
    _stop: StopPoint | None = None

    def __post_init__(self) -> None:
        self.matcher = SourceMatcher(self.packs, self.reference)
        self.builder = TimelineBuilder(job_systems=self.packs.job_systems)  # the user's packs' facts too
        self.fingerprint = FingerprintCollector(formats=self.packs.server_args)
        self.scanned = ScanResult(timeline=self.builder.finish(), unrecognised=TemplateMiner(self.packs))
        self.source = SourceFeed(0, self.matcher, self.builder, self.scanned)
        plan = plan_for(self.packs, (TRIGGER,))
        self.runs = FollowRuns(plan) if self.fast and plan.enabled else None

    def feed(self, lines: Sequence[Line], arrived: float) -> None:
        matcher, builder, fingerprint = self.matcher, self.builder, self.fingerprint
        added = False
        if not self.lines and lines and matcher.year is None:
            # as analyze's scan: year-less stamps before the first dated line take its year; a logger
            # on another clock than the log's other lines is read on theirs
            clock = head_clock(lines[:YEAR_LOOKAHEAD], self.packs, self.reference)
            matcher.year, matcher.first_date, matcher.format_offsets = clock.year, clock.first_date, clock.offsets
            self.scanned.notes += format_offset_notes(self.name, clock.offsets)
        if not fingerprint.done:
            fingerprint.feed_all(line.text for line in lines)
        chosen: Iterable[Line] = lines if self.runs is None else self.runs.lines(lines, matcher)
        for line in chosen:
            events = self.source.feed(line)
            added = added or bool(events)
            if self.runs is not None:
                self.runs.book(line, events)
        if self.runs is not None:
            skipped = self.runs.take_stats()
            self.skipped_lines += skipped.skipped_events
            skipped.count_events(builder)  # steady events counted, not read (as analyze's fast path)
        if lines:
            builder.see_ranks(matcher.ranks_seen)
            self.source.passed(lines[-1])
            self.last_line = lines[-1]
            self.lines = max(self.lines, lines[-1].number)
        if matcher.last_time is not None and matcher.last_time != self.log_time:
            self.log_time, self.log_time_arrived = matcher.last_time, arrived
        if builder.last_progress is not self.progress:
            self.progress, self.progress_arrived = builder.last_progress, arrived
            # caught up in one batch (an existing file): the log itself says how long ago it was;
            # stamps have whole seconds, so one second of difference is no evidence
            stamped = self.progress.time if self.progress is not None else None
            gap = (matcher.last_time - stamped).total_seconds() if matcher.last_time and stamped else 0.0
            self.backlog = max(0.0, gap - 1.0)
        if added:
            self._timeline = self._judgement = self._stop = None

    def note(self, text: str) -> None:
        """What reading the log assumed (its envelopes: logphase/envelope.py), for the final report."""
        self.scanned.notes.append(text)

    def end(self) -> None:
        """The input ended (or the watch does): events the matcher held back (a dump's last frames)."""
        first = not self.source.ended
        if self.source.end():
            self._timeline = self._judgement = self._stop = None
        if first:
            self.scanned.notes += ignored_stamp_notes(self.name, self.matcher.stamps)

    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = self.builder.finish()
        return self._timeline

    def scan_result(self) -> ScanResult:
        """What `analyze`'s scan would have left for the lines fed so far: the final report's input."""
        self.scanned.timeline = self.timeline()
        return self.scanned

    def judgement(self, budgets: Budgets, now: float, *, post_mortem: bool = False) -> Judgement:
        """Failure, ready and phase come from the lines; stalled vs progressing is `observe`'s
        (by arrival), so the judgement is only renewed when new events came in. Once the input
        ended, the log is a finished one: judged post-mortem, as analyze judges it."""
        if post_mortem:
            return judge(self.timeline(), as_of=self.log_now(now) or self.reference, post_mortem=True, budgets=budgets)
        if self._judgement is None:
            log_now = self.log_now(now) or self.reference
            self._judgement = judge(self.timeline(), as_of=log_now, post_mortem=False, budgets=budgets)
        return self._judgement

    def stop_point(self) -> StopPoint:
        if self._stop is None:
            self._stop = stop_point(self.timeline().spans, self.lines)
        return self._stop

    def log_now(self, now: float) -> datetime | None:
        """The log's clock now: its latest stamp plus the time since that stamp arrived."""
        if self.log_time is None or self.log_time_arrived is None:
            return None
        return self.log_time + timedelta(seconds=max(0.0, now - self.log_time_arrived))

    def silence(self, now: float, since: float) -> float:
        """Seconds without progress as of `now`: since the progress arrived, plus how far the log
        had already gone past it when it arrived; `since` (the watch's start) when there was none."""
        if self.progress is None or self.progress_arrived is None:
            return now - since
        return max(0.0, now - self.progress_arrived) + self.backlog

    def in_phase(self, phase: Phase | None, now: float) -> float | None:
        """How long the server has been in `phase`: from the phase's first stamp to the log's now."""
        log_now = self.log_now(now)
        if phase is None or log_now is None:
            return None
        starts = [s.start for s in self.timeline().spans if s.phase is phase and s.start is not None]
        return max(0.0, (log_now - min(starts)).total_seconds()) if starts else None

    def observe(
        self,
        now: float,
        *,
        since: float,
        budgets: Budgets,
        probe: Probe | None = None,
        process_alive: bool | None = None,
        input_ended: bool = False,
    ) -> Observation:
        if input_ended:
            judgement: Judgement | None = self.judgement(budgets, now, post_mortem=True)
        else:
            judgement = self.judgement(budgets, now) if self.builder.events else None
        stop = self.stop_point()
        return Observation(
            t=now,
            lines=self.lines,
            judgement=judgement,
            stop=stop,
            in_phase_s=self.in_phase(stop.phase, now),
            silence_s=self.silence(now, since),
            last_progress_line=self.progress.line if self.progress else None,
            probe=probe,
            process_alive=process_alive,
            input_ended=input_ended,
        )


# --- the state machine (pure) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """What the watch was asked for, and what baselines know about this setup."""

    budgets: Budgets = field(default_factory=Budgets)  # --stall-after, learned, the packs' defaults
    timeout_s: float | None = None
    stats: Mapping[Phase, PhaseStats] = field(default_factory=dict)
    pool: Sequence[RunRecord] = ()
    pid: int | None = None
    health_url: str | None = None  # given: only the URL can say ready (issue 14)


@dataclass(frozen=True)
class Observation:
    """One tick: what the log says as of `t` (seconds since the watch began), and the probes."""

    t: float
    lines: int
    judgement: Judgement | None
    stop: StopPoint
    in_phase_s: float | None
    silence_s: float
    last_progress_line: int | None = None
    probe: Probe | None = None
    process_alive: bool | None = None
    input_ended: bool = False

    @property
    def phase(self) -> Phase | None:
        return self.judgement.phase if self.judgement is not None else None


@dataclass(frozen=True)
class WatchState:
    phase: Phase | None = None
    phase_since: float = 0.0
    health: Health | None = None
    health_changed: float | None = None
    health_text: str | None = None
    overdue: bool = False
    samples: tuple[tuple[float, int], ...] = ()
    log_ready: str | None = None  # the log's reason for ready, while the health URL does not confirm it
    unconfirmed_said: bool = False
    outcome: LiveDecision | None = None  # how the watch ends: judging/live.py decided it


class WatchEvent(StrEnum):
    """What a transition reports (`event` of its JSON line with `--format jsonl`)."""

    PHASE = "phase"
    HEALTH = "health"
    READY_UNCONFIRMED = "ready_unconfirmed"  # the log says ready, the health URL does not
    OVERDUE = "overdue"
    OUTCOME = "outcome"


JsonScalar = str | int | float | bool | None


@dataclass(frozen=True)
class Transition:
    """Something the watch tells as it happens: one line of text, or one JSON event."""

    t: float
    event: WatchEvent
    text: str
    fields: Mapping[str, JsonScalar] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"[{format_clock(self.t)}] {self.text}"

    def to_json(self) -> dict[str, JsonScalar]:
        """`{"t", "event", ...its fields, "text"}`: `t` in seconds since the watch began."""
        return {"t": round(self.t, 3), "event": str(self.event), **self.fields, "text": self.text}


def outcome_transition(
    state: WatchState, t: float, settings: Settings, *, confidence: str, exit_code: ExitCode
) -> Transition:
    """The watch's last word, told once the final report is judged (the confidence and the exit code
    are the report's, as analyze gives them): the outcome, with both sides when the health URL
    overruled a log that says ready."""
    outcome = state.outcome
    if outcome is None:
        raise ValueError("the watch has no outcome yet")
    message = outcome.reason
    log_says = state.log_ready if outcome.verdict is not Verdict.READY else None
    if log_says is not None:
        message += f"; {unconfirmed(settings.health_url, state.health_text or 'not asked yet', log_says)}"
    fields: dict[str, JsonScalar] = {
        "verdict": str(outcome.verdict),
        "confidence": confidence,
        "exit_code": int(exit_code),
    }
    return Transition(t, WatchEvent.OUTCOME, message, {**fields, "log_says_ready": log_says})


def interrupted(state: WatchState, t: float, settings: Settings) -> WatchState:
    """A person stopped the watch (Ctrl-C, SIGTERM): the server was still starting as far as it knows."""
    facts = LiveFacts(t=t, silence_s=0.0, phase=state.phase, interrupted=True)
    return replace(state, outcome=decide(None, facts, settings.budgets.for_phase(state.phase)))


def step(state: WatchState, obs: Observation, settings: Settings) -> tuple[WatchState, tuple[Transition, ...]]:
    """One tick of the watch: what changed (health, phase, overdue, a ready the URL does not confirm)
    as transitions, and the outcome once judging/live.py decides the watch has its answer. Health
    changes count as progress (refused → 503 → 200 is the server moving on even when its log is
    quiet)."""
    said: list[Transition] = []
    samples = tuple(s for s in (*state.samples, (obs.t, obs.lines)) if s[0] >= obs.t - RATE_WINDOW_S)
    state = replace(state, samples=samples)
    probe = obs.probe
    if probe is not None and probe.health is not state.health:
        changed = state.health is not None
        state = replace(
            state,
            health=probe.health,
            health_text=probe.text,
            health_changed=obs.t if changed else state.health_changed,
        )
        fields: dict[str, JsonScalar] = {"health": str(probe.health), "status": probe.status}
        said.append(Transition(obs.t, WatchEvent.HEALTH, f"health: {probe.text}", fields))
    judgement = obs.judgement
    phase = obs.phase
    if phase is not state.phase and phase is not None:
        where = f" (line {obs.last_progress_line})" if obs.last_progress_line else ""
        fields = {"phase": str(phase), "line": obs.last_progress_line}
        said.append(Transition(obs.t, WatchEvent.PHASE, f"phase: {phase}{where}", fields))
        state = replace(state, phase=phase, phase_since=obs.t, overdue=False)
    health_ready = probe is not None and probe.health is Health.READY
    if judgement is not None and judgement.verdict is Verdict.READY and settings.health_url and not health_ready:
        ready = log_ready(judgement)
        if state.log_ready is None:
            state = replace(state, log_ready=ready)
        if probe is not None and not state.unconfirmed_said:  # a probe taken after the log said ready
            text = f"not ready: {unconfirmed(settings.health_url, probe.text, ready)}"
            fields = {"log_says_ready": ready, "health": str(probe.health), "status": probe.status}
            said.append(Transition(obs.t, WatchEvent.READY_UNCONFIRMED, text, fields))
            state = replace(state, unconfirmed_said=True)
    decision = decide(judgement, _facts(state, obs, settings), settings.budgets.for_phase(phase))
    if decision.ends and decision.verdict is not Verdict.PROGRESSING:
        return replace(state, outcome=decision), tuple(said)
    stats = settings.stats.get(obs.stop.phase) if obs.stop.phase else None
    in_phase = obs.in_phase_s
    # overdue (a warning): far longer in the phase than successful runs, and nothing moved for its budget
    tests = overdue_check(stats, in_phase, _silence(state, obs))
    overdue = tests is not None and tests.holds
    if overdue and not state.overdue and stats is not None and in_phase is not None and obs.stop.phase is not None:
        usual = f"{format_duration(stats.median)} (p90 {format_duration(stats.p90)})"
        text = f"overdue: {format_duration(in_phase)} in {obs.stop.phase}, successful runs take {usual}"
        fields = {
            "phase": str(obs.stop.phase),
            "in_phase_s": round(in_phase, 3),
            "median_s": stats.median,
            "p90_s": stats.p90,
        }
        said.append(Transition(obs.t, WatchEvent.OVERDUE, text, fields))
        state = replace(state, overdue=True)
    if decision.ends:  # the deadline: still starting, and the watch gives up
        state = replace(state, outcome=decision)
    return state, tuple(said)


def _silence(state: WatchState, obs: Observation) -> float:
    """Silence by arrival; a health change is progress too."""
    if state.health_changed is None:
        return obs.silence_s
    return min(obs.silence_s, obs.t - state.health_changed)


def _facts(state: WatchState, obs: Observation, settings: Settings) -> LiveFacts:
    """What the watch saw at this tick, for judging/live.py."""
    probe = obs.probe
    return LiveFacts(
        t=obs.t,
        silence_s=_silence(state, obs),
        phase=obs.phase,
        last_progress_line=obs.last_progress_line,
        health_ready=probe is not None and probe.health is Health.READY,
        health_text=probe.text if probe is not None else state.health_text,
        health_url=settings.health_url,
        pid=settings.pid,
        process_exited=obs.process_alive is False,
        input_ended=obs.input_ended,
        timed_out=settings.timeout_s is not None and obs.t >= settings.timeout_s,
    )


def unconfirmed(url: str | None, health: str, log_says: str) -> str:
    """Both sides when the URL overrules a log that says ready."""
    return f"{url}: {health}, though the log says ready: {log_says}"


def status_line(state: WatchState, obs: Observation, settings: Settings) -> str:
    """The one live line on a TTY: phase, time in it (and the usual), lines/s, time since the last
    progress, ETA, health."""
    parts = []
    phase = obs.phase
    if phase is None:
        parts.append(f"waiting for a recognisable line ({obs.lines} lines)")
    else:
        in_phase = obs.in_phase_s if obs.in_phase_s is not None else obs.t - state.phase_since
        stats = settings.stats.get(obs.stop.phase) if obs.stop.phase else None
        usual = f" (usually {format_duration(stats.median)})" if stats else ""
        parts.append(f"{phase} {format_duration(in_phase)}{usual}")
    parts.append(f"{rate(state.samples):.0f} lines/s")
    parts.append(f"progress {format_duration(obs.silence_s)} ago")
    eta = estimate_eta(settings.pool, obs.stop.phase, obs.in_phase_s, obs.stop.ended) if settings.pool else None
    if eta is not None:
        spread = f" ({format_duration(eta.low)}–{format_duration(eta.high)})" if eta.high - eta.low >= 1 else ""
        rough = " (a rough guess)" if eta.runs < MIN_RUNS_FOR_BUDGET else ""
        parts.append(
            f"ready in ~{format_duration(eta.seconds)}{spread}, from {eta.runs} run{'s' * (eta.runs != 1)}{rough}"
        )
    if state.overdue:
        parts.append("OVERDUE")
    if state.health is not None:
        parts.append(f"health {state.health_text}")
    return " · ".join(parts)


def rate(samples: Sequence[tuple[float, int]]) -> float:
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return 0.0
    return max(0.0, (samples[-1][1] - samples[0][1]) / (samples[-1][0] - samples[0][0]))


def format_clock(seconds: float) -> str:
    return f"+{seconds:6.1f}s"
