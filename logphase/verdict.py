"""Where the pipelines meet: timeline (+ stacks, + baselines) and a point in time → a verdict (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from logphase.logs.matcher import Event
from logphase.logs.timeline import Timeline, is_tagged, rank_number, rank_sort_key
from logphase.phases import MAIN_PROCESS_PHASES, EventKind, Phase, Role, Verdict

# Without baselines or a pack budget, this much silence in a phase makes a live run `stalled`.
FALLBACK_BUDGET_S = 900.0
# A rank this long behind the first rank to enter the furthest phase is behind, not just skewed.
LAG_GRACE_S = 30.0
_FAILURE_VERDICT = {
    EventKind.ERROR: Verdict.CRASHED,
    EventKind.FATAL: Verdict.ABORTED,
    EventKind.TIMEOUT: Verdict.TIMEOUT,
}


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str
    phase: Phase | None
    furthest_phase: Phase | None
    culprit_ranks: tuple[str, ...]
    root_cause: Event | None
    silence_s: float | None  # as_of − last progress (live), or last line − last progress (post-mortem)
    budget_s: float | None


def judge(
    timeline: Timeline,
    *,
    as_of: datetime,
    post_mortem: bool,
    budgets: Mapping[Phase, float],
    last_activity: datetime | None = None,
) -> Judgement:
    """DESIGN.md §4. `as_of` is *now* for a live log; `last_activity` (a file's mtime) stands in
    for the time of the last progress when the log has no timestamps at all."""
    phase, furthest = server_phase(timeline)
    failure = _first_root_failure(timeline, after=timeline.ready)
    if failure is not None:
        root = _exception_line(timeline, failure)
        verdict = _FAILURE_VERDICT[failure.kind]
        if verdict is Verdict.CRASHED and any(
            e.kind is EventKind.FATAL and e.order_key >= failure.order_key for e in timeline.failures
        ):
            verdict = Verdict.ABORTED  # the exception ended in a fatal signal (c10 abort, segfault)
        culprits = _failure_culprits(timeline, root, failure)
        where = f" during {phase}" if phase else ""
        who = f"{root.rank} " if root.rank else ""
        reason = f"{who}{_VERB[verdict]}{where}: {_message(root)} (line {root.line})"
        return Judgement(verdict, reason, phase, furthest, culprits, root, None, None)

    if timeline.ready is not None or (phase in (Phase.READY, Phase.SERVING) and timeline.served):
        ready = timeline.ready
        reason = f"ready: {_message(ready)} (line {ready.line})" if ready else f"the server is {phase}"
        return Judgement(Verdict.READY, reason, phase, furthest, (), None, None, None)

    if phase is None:
        return Judgement(Verdict.UNKNOWN, "no line matched any pattern", None, None, (), None, None, None)

    progress = timeline.last_progress
    culprits = _lagging_ranks(timeline)
    budget = budgets.get(phase, FALLBACK_BUDGET_S)
    progress_time = progress.time if progress and progress.time else last_activity
    if post_mortem:
        end = timeline.last_time
        silence = (end - progress_time).total_seconds() if end and progress_time else None
        quiet = f"; last progress {format_duration(silence)} before the end" if silence else ""
        at = f" (line {progress.line})" if progress else ""
        reason = f"the log ends during {phase} with no error{quiet}{at}"
        return Judgement(Verdict.STALLED, reason, phase, furthest, culprits, progress, silence, budget)

    silence = (as_of - progress_time).total_seconds() if progress_time else None
    if silence is None:
        reason = f"in {phase}; the log has no timestamps to judge silence by"
        return Judgement(Verdict.PROGRESSING, reason, phase, furthest, culprits, None, None, budget)
    if silence > budget:
        reason = f"no progress for {format_duration(silence)} in {phase} (budget {format_duration(budget)})"
        if progress:
            reason += f"; last progress at line {progress.line}"
        return Judgement(Verdict.STALLED, reason, phase, furthest, culprits, progress, silence, budget)
    reason = f"in {phase}; last progress {format_duration(silence)} ago, within the {format_duration(budget)} budget"
    return Judgement(Verdict.PROGRESSING, reason, phase, furthest, culprits, None, silence, budget)


_VERB = {Verdict.CRASHED: "crashed", Verdict.ABORTED: "aborted", Verdict.TIMEOUT: "timed out"}


def server_phase(timeline: Timeline) -> tuple[Phase | None, Phase | None]:
    """(phase of the slowest rank, phase of the fastest) — DESIGN.md §4.5."""
    states = list(timeline.ranks)
    main = timeline.main
    reached = [state.reached for state in states] + ([main.reached] if main else [])
    if not reached:
        return None, None
    furthest = max(reached, key=lambda p: p.order)
    latest = timeline.latest_phase_event
    if main is not None and main.reached in MAIN_PROCESS_PHASES:
        phase = main.reached
    elif states:
        slowest = min(states, key=lambda s: s.reached.order)
        phase = slowest.current
    else:
        assert main is not None
        phase = main.current
    if phase not in (Phase.READY, Phase.SERVING) and latest is not None and latest.phase is Phase.COMPILE:
        phase = Phase.COMPILE  # lazy JIT is what the server is doing while it is the latest news
    return phase, furthest


def _first_root_failure(timeline: Timeline, after: Event | None) -> Event | None:
    """The first root failure in time, else the first cascade. A traceback counts with the role of
    its exception line (torchrun's own traceback ends in a cascade, ChildFailedError). A traceback
    the server survived — it said it was ready afterwards — is not why the run failed."""
    failures = [e for e in timeline.failures if after is None or e.order_key > after.order_key]
    roots = [event for event in failures if _exception_line(timeline, event).role is Role.ROOT]
    if roots:
        return roots[0]
    return failures[0] if failures else None


def _exception_line(timeline: Timeline, failure: Event) -> Event:
    """A traceback's last line says what failed; the line that opened it only says that."""
    if failure.block is None:
        return failure
    in_block = [
        e
        for e in timeline.failures
        if e.source == failure.source
        and e.block == failure.block
        and e.line > failure.line
        and e.kind is EventKind.ERROR
        and not e.rule.opens_block
    ]
    return in_block[-1] if in_block else failure


def _failure_culprits(timeline: Timeline, root: Event, failure: Event) -> tuple[str, ...]:
    ranks = [state.rank for state in timeline.ranks if state.rank is not None]
    if failure.kind is EventKind.TIMEOUT and timeline.work:
        behind = _behind_in_collectives(timeline)
        if behind:
            return behind
    if Role.CASCADE in (failure.role, root.role):
        # every visible failure is a consequence: the rank that said nothing is the one to look at
        failed = {_canonical(timeline, e.rank) for e in timeline.failures}
        silent = tuple(rank for rank in ranks if rank not in failed)
        return silent if 0 < len(silent) < len(ranks) else ()
    rank = _canonical(timeline, root.rank)
    failed = {_canonical(timeline, e.rank) for e in timeline.failures}
    others_healthy = any(other not in failed for other in ranks if other != rank)
    return (rank,) if rank is not None and rank in ranks and others_healthy else ()


def _behind_in_collectives(timeline: Timeline) -> tuple[str, ...]:
    """Ranks whose watchdog reports fewer completed collectives than the others'."""
    completed = {w.rank: w.last_completed for w in timeline.work if w.last_completed is not None}
    if len(set(completed.values())) > 1:
        lowest = min(completed.values())
        return tuple(
            sorted((_canonical(timeline, r) or r for r, c in completed.items() if c == lowest), key=rank_sort_key)
        )
    return ()


def _lagging_ranks(timeline: Timeline) -> tuple[str, ...]:
    """Ranks behind the rest: an earlier phase than most, or an NCCL init that never completed."""
    pending: set[str] = set()
    for comm in timeline.comms:
        missing = comm.started - comm.completed
        if comm.completed and missing:
            pending |= missing
    if pending:
        return tuple(sorted((_canonical(timeline, r) or r for r in pending), key=rank_sort_key))
    states = [s for s in timeline.ranks if s.rank is not None]
    if len(states) < 2:
        return ()
    furthest = max((s.reached for s in states), key=lambda phase: phase.order)
    behind = [s.rank for s in states if s.reached.order < furthest.order and s.rank is not None]
    if not behind or len(behind) >= len(states):
        return ()
    # ranks a few seconds apart are skew, not a culprit: the others must be ahead for a while
    entered = [span.start for span in timeline.spans if span.phase is furthest and span.start is not None]
    if entered and timeline.last_time is not None and (timeline.last_time - min(entered)).total_seconds() < LAG_GRACE_S:
        return ()
    return tuple(behind)


def _canonical(timeline: Timeline, rank: str | None) -> str | None:
    """`rank 3` (NCCL, torch) is `TP3` in a log whose ranks carry SGLang tags, when unambiguous."""
    if rank is None or is_tagged(rank):
        return rank
    number = rank_number(rank)
    matches = [
        s.rank for s in timeline.ranks if s.rank is not None and is_tagged(s.rank) and rank_number(s.rank) == number
    ]
    return matches[0] if len(matches) == 1 else rank


def _message(event: Event) -> str:
    text = event.message.strip()
    return text if len(text) <= 160 else text[:157] + "..."


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
