"""The watch's state machine, pure: observations → transitions, the status line, the outcome (judging/live.py's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from logphase.baselines.records import RunRecord, StopPoint
from logphase.baselines.stats import MIN_RUNS_FOR_BUDGET, PhaseStats, estimate_eta, overdue_check
from logphase.durations import format_duration
from logphase.errors import ExitCode
from logphase.judging.budgets import Budgets
from logphase.judging.live import LiveDecision, LiveFacts, awaits_rest, decide, log_ready
from logphase.judging.logs import Judgement
from logphase.phases import Phase, Verdict
from logphase.watch.health import Health, Probe

# lines/s is averaged over this many seconds: smooth enough to read, recent enough to mean "now".
RATE_WINDOW_S = 5.0


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
    open_block: int | None = None  # the traceback or dump the log leaves open so far (its first line)

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
    cut_since: float | None = None  # since when the failure has rested on a traceback still open (rest awaited)


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
    cut = awaits_rest(obs.judgement, obs.open_block)
    state = replace(state, cut_since=(obs.t if state.cut_since is None else state.cut_since) if cut else None)
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
    # the log's own evidence (a bar's pace, a rank's cadence) bounds the silence as analyze bounds it
    budget = judgement.budget if judgement is not None and judgement.budget is not None else None
    decision = decide(judgement, _facts(state, obs, settings), budget or settings.budgets.for_phase(phase))
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
        cut_waited_s=obs.t - state.cut_since if state.cut_since is not None else None,
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
