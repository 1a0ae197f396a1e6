"""Log judgement: a timeline, its budgets and a point in time → verdict, reason, culprits and root cause (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from logphase.bounded import read_int, read_signed
from logphase.durations import format_duration
from logphase.judging.budgets import Budget, Budgets, stall_words
from logphase.logs.matcher import (
    CUT_LEAD,
    CUT_TRACEBACK,
    FALLBACK_PACK,
    FRAME_READ,
    PLACED_BY,
    STATEMENT,
    STATEMENT_LINE,
    STATEMENT_TEXT,
    TRACEBACK_HEADER,
    Event,
    Tail,
)
from logphase.logs.timeline import (
    RankState,
    Timeline,
    as_whole,
    is_tagged,
    rank_number,
    rank_sort_key,
    requests_held,
)
from logphase.phases import MAIN_PROCESS_PHASES, EventKind, Phase, Role, Verdict
from logphase.ranks import format_rank_set

# Two inputs whose recognised lines are this far apart in time are two runs, not parts of one: a rotated
# log's files follow each other within seconds, a run's logs per node or per rank overlap.
RUNS_APART_S = 3600.0
# Said when the inputs are not one run's.
MIXED_HINT = (
    "analyze each run's logs on their own (`logphase analyze A.log`, then `logphase analyze B.log`); give "
    "several logs only of one run: a log per node or per rank, or a rotated log's files"
)
# A rank this long behind the first rank to enter the furthest phase is behind, not just skewed.
LAG_GRACE_S = 30.0
# Stamps up to this far after the time of judging are the two clocks' drift, not a clock ahead.
CLOCK_SLACK_S = 60.0
# the capture of a rule that reads a wrapper of a relayed exception naming the class it wraps (`RayTaskError(<Cls>)`)
RELAYED_CLASS = "relayed_class"
# an exception line's class, dotted path dropped (`ray.exceptions.ActorDiedError: …` → ActorDiedError)
EXCEPTION_CLASS = re.compile(r"\s*(?:[A-Za-z_][\w]*\.)*(?P<cls>[A-Za-z_]\w*)(?::|$)")
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
    doubts: tuple[str, ...] = ()  # what the judging had to weigh against the verdict, in words
    budget: Budget | None = None  # the rule that gave `budget_s` (watch decides with the same one)


def mixed_runs(timeline: Timeline, relaunched: Sequence[tuple[int, int]], names: Sequence[str]) -> str | None:
    """Why logs given together are not one run's, or None: they name two server systems, their lines lie
    over RUNS_APART_S apart, or one holds another launch after its start went on. Merged, two runs would
    give one confident answer that is neither's."""
    if len(names) < 2:
        return None
    systems = [(facts.source, facts.system) for facts in timeline.inputs if facts.system is not None]
    for source, system in systems[1:]:
        origin, named = systems[0]
        if system != named:
            return f"{names[origin]} is a {named} log and {names[source]} a {system} log: two runs, not one"
    timed: list[tuple[datetime, datetime, int]] = []
    for facts in timeline.inputs:
        if facts.first_time is not None and facts.last_time is not None:
            timed.append((facts.first_time, facts.last_time, facts.source))
    timed.sort()
    ended, last = (timed[0][1], timed[0][2]) if timed else (datetime.min, 0)
    for begun, end, source in timed[1:]:
        gap = (begun - ended).total_seconds()
        if gap > RUNS_APART_S:
            return f"{names[source]} begins {format_duration(gap)} after {names[last]} ends: two runs, not one"
        if end > ended:
            ended, last = end, source
    if relaunched:
        source, line = relaunched[0]
        return f"{names[source]} holds another launch at line {line}, after its start went on: two runs, not one"
    return None


def judge(
    timeline: Timeline,
    *,
    as_of: datetime,
    post_mortem: bool,
    budgets: Budgets,
    last_activity: datetime | None = None,
) -> Judgement:
    """docs/design.md §4. `as_of` is *now* for a live log; `last_activity` (a file's mtime) stands in
    for the time of the last progress when the log has no timestamps at all."""
    judgement = _judge(timeline, as_of=as_of, post_mortem=post_mortem, budgets=budgets, last_activity=last_activity)
    return _frame_placed(timeline, _module_placed(timeline, judgement))


def module_placement(timeline: Timeline, judgement: Judgement) -> Event | None:
    """The first line that placed the run in the judged phase, or else in its furthest phase, where only a fallback
    did (a line no rule read, placed by its logger's module: pack `[[module]]`); None where a rule's line did."""
    for phase in (judgement.phase, judgement.furthest_phase):
        placed = timeline.placed_by_module.get(phase) if phase is not None else None
        if placed is not None:
            return placed
    return None


def frame_placement(timeline: Timeline, judgement: Judgement) -> Event | None:
    """The frame group that placed a run judged open (stalled, progressing) in its phase, where only a stack's frames
    did (a py-spy or faulthandler dump pasted as the log, a traceback's frames): None where a line of the program did,
    and for a failure, whose own line says what happened."""
    if judgement.verdict not in (Verdict.STALLED, Verdict.PROGRESSING) or judgement.phase is None:
        return None
    return timeline.placed_by_frames.get(judgement.phase)


def _frame_placed(timeline: Timeline, judgement: Judgement) -> Judgement:
    """The judgement, saying so where its phase rests on a stack's frames alone: one stack shows where its thread
    was when it was printed, not whether it moved after (a second dump, or the log around it, would). Where no line
    of the run reports a step (no progress line to quote: a dump pasted alone), the frame that placed it is where
    the run stopped, its cause (fixtures/realworld/README.md: an open run's last line that says where it is)."""
    placed = frame_placement(timeline, judgement)
    if placed is None:
        return judgement
    words = (
        f"{placed.phase} placed by a stack's frames alone (`{placed.captures.get('frame', '?')}`, line {placed.line}):"
        " where its thread was when the stack was printed, not whether it moved after"
    )
    cause = judgement.root_cause if judgement.root_cause is not None else placed
    return replace(
        judgement, reason=f"{judgement.reason}; {words}", doubts=(*judgement.doubts, words), root_cause=cause
    )


def _module_placed(timeline: Timeline, judgement: Judgement) -> Judgement:
    """The judgement, saying so where its phase (or furthest phase) rests on a line no rule read that its logger's
    module placed."""
    placed = module_placement(timeline, judgement)
    if placed is None:
        return judgement
    lead = placed.captures.get(CUT_LEAD)
    if lead is not None:
        # the log's last line, cut before its rule's leading text ended (matcher.cut_phase)
        words = (
            f"{placed.phase} placed by the log's last line, cut inside `{lead}` ({placed.captures.get(PLACED_BY, '?')},"
            f" line {placed.line}), no rule read it"
        )
    else:
        words = (
            f"{placed.phase} placed by its logger's module {placed.captures.get(PLACED_BY, '?')} (line {placed.line}),"
            " no rule read it"
        )
    return replace(judgement, reason=f"{judgement.reason}; {words}", doubts=(*judgement.doubts, words))


def _judge(
    timeline: Timeline,
    *,
    as_of: datetime,
    post_mortem: bool,
    budgets: Budgets,
    last_activity: datetime | None = None,
) -> Judgement:
    phase, furthest = server_phase(timeline)
    failure = _first_root_failure(timeline, after=timeline.ready, interrupt=timeline.interrupt)
    if failure is not None:
        stated = _relayed(timeline, _exception_line(timeline, failure))
        root = _named_collective(timeline, _first_observed(timeline, stated))
        root = _innermost_frame(timeline, _stated_by_statement(timeline, root))
        verdict = _FAILURE_VERDICT[root.kind]
        if verdict is Verdict.ABORTED and _sigkill(root):
            # killed by another process (the OOM killer, most often): no fatal error of its own
            verdict = Verdict.CRASHED
        if verdict is Verdict.CRASHED and any(
            e.kind is EventKind.FATAL
            and e.order_key >= failure.order_key
            and not _sigkill(e)
            # a failure table's rows say how each worker ended (the agent's SIGTERM to the survivors): the
            # entry chosen as the cause already spoke for the table; a fatal line after a message at the margin
            # (the shell's `Aborted (core dumped)` after a `what():`) is this process's own end (`Tail`)
            and e.tail is not Tail.MESSAGE
            for e in timeline.failures
        ):
            verdict = Verdict.ABORTED  # the exception ended in a fatal signal (c10 abort, segfault)
        culprits = _failure_culprits(timeline, root, failure)
        root = replace(root, rank=_canonical(timeline, root.rank))
        where = f" during {phase}" if phase else ""
        counted = _phase_of_collective(root) if phase is None else None
        if counted is not None:
            if furthest is None or counted.order > furthest.order:
                furthest = counted
            phase, where = counted, f" during {counted} (its collective counters)"
        elif phase is None and root.rule.reached is Phase.SERVING:
            # no phase line: a failure printed only while the run serves (SGLang's watchdog report of a running batch)
            # was in the last phase there is, the one it proves reached
            phase, where = Phase.SERVING, f" during {Phase.SERVING}"
        # no phase line nor anchored frame: the phase is only what a failure proves (a process ran), said so below
        unplaced, floor = phase is None, furthest
        phase, furthest = _launched(phase, furthest)  # said as its phase, not as where it failed
        who = f"{root.rank} " if root.rank else ""
        relayed = _relayed_from(root)
        if relayed is not None:  # this rank only heard of another rank's timeout
            who = f"rank {relayed} (reported by {root.rank or 'another rank'}) "
        reason = f"{who}{_VERB[verdict]}{where}: {_collective(root) or _message(root)} (line {root.line})"
        if verdict is Verdict.TIMEOUT and culprits and root.rank not in culprits:
            # the rank that reported waited on the ones that never arrived: those are named first
            reason = f"{format_rank_set(culprits)} did not arrive: {reason}"
        if unplaced:
            reason += _unplaced(floor)
        return Judgement(verdict, reason, phase, furthest, culprits, root, None, None)

    job = _job_bar(timeline)
    # a job's steps (training on torchrun) are `serving` but never `ready`: a job is judged by whether its steps
    # go on (progressing / stalled) and how it ends (finished); only a server (or an unknown system) serves
    # a server's engine driven as a library (`timeline.offline`) runs a job too
    serves = (timeline.system_is_server or timeline.system is None) and timeline.offline is None
    # an engine put to sleep and not woken since serves nothing (vLLM's sleep mode, an RL trainer's rollout engine
    # between rollouts): not ready, a step of the run that is judged open
    asleep = timeline.asleep
    looks_ready = (
        job is None
        and asleep is None
        and (timeline.ready is not None or (phase in (Phase.READY, Phase.SERVING) and timeline.served and serves))
    )
    # the health route outranks every other route: its newest answer said it is not up. Said only
    # where it overrules other evidence (a 503 during warmup with nothing else is just warmup)
    unhealthy = _unhealthy(timeline) if looks_ready else None
    hang = timeline.hang  # the program's own report that it is stuck, with no progress since
    if looks_ready and unhealthy is None and hang is None:
        stopped = _stopped_holding(
            timeline, as_of=as_of, post_mortem=post_mortem, budgets=budgets, last_activity=last_activity
        )
        if stopped is not None:
            return replace(stopped, furthest_phase=furthest)
        ready = timeline.ready
        reason = f"ready: {_message(ready)} (line {ready.line})" if ready else f"the server is {phase}"
        return Judgement(Verdict.READY, reason, phase, furthest, (), None, None, None)
    if unhealthy is not None and timeline.ready is None:
        phase = Phase.WARMUP

    if hang is not None:  # a fragment of hang reports alone (vLLM's shm broadcast lines)
        phase, furthest = _launched(phase, furthest)
    finished = _clean_exit(timeline)
    noted = timeline.noted_step if phase is None and finished is None and hang is None else None
    if noted is not None and noted.rule.reached is not None:
        # no phase line at all: a note the program prints only while a step runs says where the run is (torch's
        # capture waiting for pending NCCL work: cuda_graph; docs/design.md §4.4), as a hang report's rule does
        phase = furthest = noted.rule.reached
    if phase is None and finished is None:
        return Judgement(Verdict.UNKNOWN, _nothing_placed(timeline), None, None, (), None, None, None)
    # a bar that filled before, begun anew since, ends a step when full, not the job (timeline.step_bar)
    filled = job is not None and job.captures.get("done") == job.captures.get("total")
    if job is not None and filled and hang is None and not timeline.step_bar:
        reason = f"the job finished: its progress bar reached {job.captures['done']}/{job.captures['total']}"
        reason += f" (line {job.line}, {_message(job)})"
        teardown = _teardown(timeline)
        reason += "".join(f"; then {words}" for words in teardown)
        return Judgement(Verdict.FINISHED, reason, phase, furthest, (), None, None, None, teardown)
    if finished is not None:  # a job's tail: every rank's clean exit says it finished, whatever phase it was in
        last = f"{finished.rank}, " if finished.rank else ""
        last += f"line {finished.line}, {_message(finished)}"
        reason = f"the job finished: every rank shut down cleanly (the last: {last})"
        if finished is timeline.group_exit:
            reason = f"the job finished, as its own end line says: {_message(finished)} (line {finished.line})"
        # the furthest phase is what the lines prove, the exit lines' own `reached` included (docs/design.md §4.6):
        # a launcher's SUCCEEDED record proves the job's steps, ProcessGroupNCCL's destructor warning only the group
        # it tears down (the interpreter prints it at any exit, an uncaught exception's too)
        teardown = _teardown(timeline)
        reason += "".join(f"; then {words}" for words in teardown)
        return Judgement(Verdict.FINISHED, reason, phase, furthest, (), None, None, None, teardown)

    progress = timeline.last_progress
    if progress is not None:
        progress = replace(progress, rank=_canonical(timeline, progress.rank))
    culprits = _lagging_ranks(timeline)
    behind = _behind(timeline, culprits, furthest)
    # what the reason says after itself: the evidence it weighed against its first reading
    also = (
        ""
        if unhealthy is None
        else f"; the newest /health answered {_health_status(unhealthy)} (line {unhealthy.line})"
    )
    doubts = [] if unhealthy is None else ["the health route outranked other routes that said it was up"]
    if asleep is not None:
        also += f"; the engine was put to sleep (line {asleep.line}: {_message(asleep)}) and no line says it woke"
    if noted is not None:
        words = f"{phase} placed by a note alone ({noted.rule.id}, line {noted.line}): no phase line"
        also += f"; {words}"
        doubts.append(words)
    rule = budgets.for_run(timeline, phase)
    budget = rule.seconds
    progress_time = progress.time if progress and progress.time else last_activity
    # measured against the log's own last line, the last progress must be on the log's clock too: a file's
    # mtime is the clock it is judged by (now), months from the stamps of an archived or pasted log
    stamped_progress = progress.time if progress else None
    interrupt = timeline.interrupt
    if interrupt is not None:
        # a person stopped it: the run is stalled where it was, whatever the clock says now
        end = interrupt.time or timeline.last_time
        silence = (end - stamped_progress).total_seconds() if end and stamped_progress else None
        quiet = f" after {format_duration(silence)} without progress" if silence else ""
        # where it stopped, as a stall that ended without a person says it (§4.5): the waiting line it repeated
        cause = _last_alike(timeline, progress)
        at = f"; last progress at line {progress.line}{_alike_words(progress, cause)}" if progress else ""
        reason = f"{behind}interrupted during {phase}{quiet} ({_message(interrupt)}, line {interrupt.line}){at}{also}"
        return Judgement(
            Verdict.STALLED, reason, phase, furthest, culprits, cause, silence, budget, tuple(doubts), rule
        )
    if hang is not None and (post_mortem or looks_ready):
        # docs/design.md §4.4: no progress after a hang report: stalled, the first report since is why
        at = f"; last progress at line {progress.line}" if progress else ""
        reached = hang.rule.reached
        if progress is None and reached is not None and (phase is None or reached.order > phase.order):
            # no phase line at all: the report itself says where the run was (SGLang's watchdog dump: serving)
            phase = reached
        where = "after it was ready" if looks_ready else f"during {phase}"
        reason = f"{behind}hung {where}: {_message(hang)} (line {hang.line}){at}{also}"
        start = stamped_progress if post_mortem else progress_time
        end = timeline.last_time if post_mortem else as_of
        silence = max(0.0, (end - start).total_seconds()) if end and start else None
        # during start-up (or an offline job's bar) where it stopped is its last progress line (README,
        # `root_cause_line`: a hang report is no step, and a bar at 0 % stays the cause under the `No available shared
        # memory broadcast block` lines that follow it); the report itself where no line reports a step, and once the
        # server was ready: its traffic (an access line answered by the HTTP front) says no step of the engine's; and a
        # report of a wait that is itself a step of the start (its rule's phase: vLLM's placement group being created)
        cause = hang if looks_ready or hang.phase is not None else _last_alike(timeline, progress) or hang
        return Judgement(
            Verdict.STALLED, reason, phase, furthest, culprits, cause, silence, budget, tuple(doubts), rule
        )
    if post_mortem:
        end = timeline.last_time
        silence = (end - stamped_progress).total_seconds() if end and stamped_progress else None
        quiet = f"; last progress {format_duration(silence)} before the end" if silence else ""
        cause = _last_alike(timeline, progress) or noted
        at = f" (line {progress.line}{_alike_words(progress, cause)}{_fragment_words(timeline)})" if progress else ""
        reason = f"{behind}the log ends during {phase} with no error{quiet}{at}{also}"
        return Judgement(
            Verdict.STALLED, reason, phase, furthest, culprits, cause, silence, budget, tuple(doubts), rule
        )

    silence = (as_of - progress_time).total_seconds() if progress_time else None
    if silence is not None and silence < -CLOCK_SLACK_S:
        # the log's clock runs ahead of the one it is judged by (another host, another time zone,
        # or --as-of before the log): no negative duration; measure on each clock apart instead
        end = timeline.last_time
        lead = (end - as_of).total_seconds() if end is not None else -silence
        also += f"; the log's clock is {format_duration(lead)} ahead of the time it is judged at"
        doubts.append("the log's clock runs ahead of the time it is judged at: silence measured on each clock")
        if end is not None and progress_time is not None and last_activity is not None:
            silence = (end - progress_time).total_seconds() + max(0.0, (as_of - last_activity).total_seconds())
        else:
            silence = None
    elif silence is not None:
        silence = max(0.0, silence)
    if silence is None:
        why = "no file time to measure it by" if progress_time else "the log has no timestamps to judge silence by"
        reason = f"in {phase}; {why}{also}"
        return Judgement(
            Verdict.PROGRESSING, reason, phase, furthest, culprits, None, None, budget, tuple(doubts), rule
        )
    if silence > budget:
        reason = behind + stall_words(rule, silence, phase)
        alike = _last_alike(timeline, progress)
        if progress and rule.bar is None:
            reason += f"; last progress at line {progress.line}{_alike_words(progress, alike)}"
            reason += _fragment_words(timeline)
        if hang is not None:
            reason += f"; hung since line {hang.line}: {_message(hang)}"
        reason += also
        cause = hang or alike
        return Judgement(
            Verdict.STALLED, reason, phase, furthest, culprits, cause, silence, budget, tuple(doubts), rule
        )
    reason = f"in {phase}; last progress {format_duration(silence)} ago, within the {format_duration(budget)} budget"
    reason += f" ({rule.source}){also}"
    if behind:
        reason += f"; {behind.removesuffix(': ')}"
    return Judgement(Verdict.PROGRESSING, reason, phase, furthest, culprits, None, silence, budget, tuple(doubts), rule)


def _stopped_holding(
    timeline: Timeline, *, as_of: datetime, post_mortem: bool, budgets: Budgets, last_activity: datetime | None
) -> Judgement | None:
    """A serving server whose newest stats line counts requests it holds (`timeline.load`: running, queued), each of
    which owes the log another such line, and that printed none for longer than the serving budget: stopped while it
    held them (stalled), not ready and idle. The silence is measured on the log's clock from that line to its last
    line, and live on the judge's clock from the log's last write to now as well (each clock apart). A log that ends
    at the stats line measures no silence: its server may be busy, and is ready."""
    load = timeline.load
    if load is None or load.time is None or requests_held(load) == 0 or timeline.last_time is None:
        return None
    silence = max(0.0, (timeline.last_time - load.time).total_seconds())
    if not post_mortem and last_activity is not None:
        silence += max(0.0, (as_of - last_activity).total_seconds())
    rule = budgets.for_run(timeline, Phase.SERVING)
    if silence <= rule.seconds:
        return None
    held = requests_held(load)
    reason = (
        f"the server stopped reporting while it held {held} request{'s' if held != 1 else ''}: no stats line for "
        f"{format_duration(silence)} after line {load.line} ({_message(load)}), past the "
        f"{format_duration(rule.seconds)} budget ({rule.source})"
    )
    return Judgement(Verdict.STALLED, reason, Phase.SERVING, Phase.SERVING, (), load, silence, rule.seconds, (), rule)


# CPython's words that a traceback follows, and nothing more: traceback.py's `Traceback (most recent call last):`,
# multiprocessing/process.py BaseProcess._bootstrap's `Process <name>:` (vLLM's `Process EngineCore_DP0:` too)
# and threading.excepthook's `Exception in thread <name>:`. What failed is in the exception line at the end.
# A server's own header that says no more is its pack rule's `header_only` (vLLM's `logger.exception` lines).
BARE_HEADER = re.compile(r"Traceback \(most recent call last\):|Process [\w.-]+(?::\d+)*:|Exception in thread .+:")


def _last_alike(timeline: Timeline, progress: Event | None) -> Event | None:
    """Where a stalled run stopped: its last progress line (fixtures/realworld/README.md, `root_cause_line`), the
    latest line, over every rank and rule, that reports a step (`timeline.latest_step`: a step begun or done, a bar's
    tick, an item of a list printed as it goes; not a note, `reports_step`), else the latest line of the progress's own
    kind (the same rule) when the run printed more of them after it: a waiting line repeated (vLLM's `Waiting for 1
    local, 0 remote core engine proc(s) to start.`, every 10 s). A line the excerpt cut is quoted as cut: what is left
    still says its step. The silence is still measured from the progress. A line only its logger's module placed
    (`[[module]]`: c10's `NCCL watchdog thread started!` before the options it prints) is the cause only where no rule
    read a later line of its step: that line says the step in the run's own words."""
    alike = _alike(timeline, progress)
    told = timeline.latest_told
    if (
        alike is not None
        and told is not None
        and (alike.source, alike.line) in timeline.dump_lines
        and told.order_key < alike.order_key
    ):
        # a line that dumps the run's configuration (SGLang's `server_args=ServerArgs(…)`, a pack's `[[server_args]]`)
        # reports the set-up, not a step (README: argument dumps are passed over): the progress line before it
        alike = replace(told, rank=_canonical(timeline, told.rank))
    unread = timeline.unread_step
    if unread is not None and (alike is None or unread.order_key > alike.order_key):
        # a later line no rule read that reports a step by its structure (a logger's INFO record of words, a bar's
        # tick: logs/records.py): the README counts every line of the paste, not only those a rule reads
        return unread
    return alike


def _alike(timeline: Timeline, progress: Event | None) -> Event | None:
    """`_last_alike` before a configuration dump is passed over."""
    step = timeline.latest_step
    if step is not None and (progress is None or step.order_key > progress.order_key or _is_note(progress)):
        # a later step, or the progress itself is a note its rule calls so (a warning that still places its step:
        # SGLang's `Ignore import error when loading …`): passed over back to the step before it (README,
        # `root_cause_line`)
        return replace(step, rank=_canonical(timeline, step.rank))
    latest = timeline.latest_phase_event
    if progress is None or latest is None or latest.order_key <= progress.order_key:
        return progress
    if progress.rule.pack == FALLBACK_PACK and latest.phase is progress.phase:
        # a later line of the step its module placed: read by a rule, or placed by a module too (DeepSpeed's
        # `[comm.py] Distributed backend already initialized`, then its ZeRO optimizer's `[stage_1_and_2.py] …`)
        return replace(latest, rank=_canonical(timeline, latest.rank))
    if latest.rule.id != progress.rule.id:
        return progress
    return replace(latest, rank=_canonical(timeline, latest.rank))


def _is_note(event: Event) -> bool:
    """Whether `event`'s rule says it reports no step (README, `root_cause_line`: notes, advice and warnings, plugin
    and transport notes are passed over): a pack rule's `diagnostic` role, or an `ambient` rule (a phase's machinery
    in use: NCCL's setup notes). A line only its logger's module placed is no note: no rule read what it says."""
    event = as_whole(event)
    if event.rule.pack == FALLBACK_PACK:
        return False
    return event.role is Role.DIAGNOSTIC or event.rule.ambient


def _fragment_words(timeline: Timeline) -> str:
    fragment = timeline.fragment
    if fragment is None:
        return ""
    # the cut tick still says its step (it is quoted: `_last_alike`); how far the bar got is the whole tick's count
    cut = f"line {fragment.line}, the last, is a bar's tick cut inside its count"
    return f"; {cut}: the bar's count is the whole tick's"


def _alike_words(progress: Event, alike: Event | None) -> str:
    if alike is not None and alike.order_key < progress.order_key:
        # `_alike` passed a note over (its rule's role says it reports no step), or `_last_alike` an argument dump
        said = "reports no step" if _is_note(progress) else "dumps the run's arguments"
        return f"; it {said}, its last step before it at line {alike.line}"
    if alike is None or alike.order_key <= progress.order_key:
        return ""
    if alike.rule.id == progress.rule.id:
        return f"; the same kind of line until line {alike.line}"
    return f"; its last step reported at line {alike.line}"


_VERB = {Verdict.CRASHED: "crashed", Verdict.ABORTED: "aborted", Verdict.TIMEOUT: "timed out"}
# Capture groups of a line that relays another rank's failure (torch's cross-rank dump signal).
RELAYED_FROM = ("from_rank", "from_rank2")


def _relayed_from(event: Event) -> str | None:
    return next((event.captures[key] for key in RELAYED_FROM if event.captures.get(key)), None)


def _collective(event: Event) -> str | None:
    """A watchdog's collective timeout in words: which collective, of which process group, how long
    it ran against its timeout (the captures of torch's `WorkNCCL(SeqNum=…, OpType=…)` lines; torch 1.9 numbered
    no work: `WorkNCCL(OpType=…, Timeout(ms)=…)`, the operation and its time said alone)."""
    captures = event.captures
    if not captures.get("op") or not (captures.get("seq") or captures.get("timeout_ms")):
        return None
    words = f"collective {captures['op']}" + (f" #{captures['seq']}" if captures.get("seq") else "")
    group = captures.get("pg") or (f"process group {captures['pg_id']}" if captures.get("pg_id") else "")
    if group:
        words += f" of {group}"
    if captures.get("pg_rank"):
        words += f" (rank {captures['pg_rank']} in the group)"
    ran, limit = read_int(captures.get("ran_ms")), read_int(captures.get("timeout_ms"))
    if ran is not None and limit is not None:
        words += f" ran {format_duration(ran / 1000)} against a {format_duration(limit / 1000)} timeout"
    elif limit is not None:
        words += f" timed out after {format_duration(limit / 1000)}"
    return words


def _unhealthy(timeline: Timeline) -> Event | None:
    """The health route's newest answer when it says the server is not up (a 5xx) and no ready
    line came after it: /v1/models or /model_info answering 200 during warmup does not make a
    server ready, and a script must never get exit 0 against it."""
    health = timeline.health
    if health is None or not _health_status(health).startswith("5"):
        return None
    if timeline.ready is not None and timeline.ready.order_key > health.order_key:
        return None
    return health


def _health_status(event: Event) -> str:
    return event.captures.get("health_status", "")


# Collectives a process group had completed when one timed out: from this many on, the job was in its steady
# state (the pack's `torch.watchdog.collective_timeout_steady` reads `SeqNum=` of three digits the same way).
STEADY_COLLECTIVES = 100


def _phase_of_collective(root: Event) -> Phase | None:
    """A collective's failure with no phase line around it: its own counters say where the job was. None of
    the group's collectives completed (SeqNum 1, `last completed` 0 or -1): its first, the distributed init's
    barrier or broadcast; a hundred completed: the steady state (serving, a job's steps); between: unknown."""
    captures = root.captures
    completed = read_signed(captures.get("last_completed"))
    if completed is None:
        seq = read_signed(captures.get("seq"))
        completed = seq - 1 if seq is not None else None
    if completed is None:
        return None
    if completed >= STEADY_COLLECTIVES:
        return Phase.SERVING
    return Phase.DIST_INIT if completed <= 0 else None


def _unplaced(floor: Phase | None) -> str:
    """Why a failure's phase is what it is when no phase line and no frame of a step (`[[anchor]]`, a signature's
    phase) placed it: `launch` says only that a process ran, a line's `reached` only how far the run got at least.
    A frame that runs in several steps (a model's `forward`: the profile run, a capture and each request) places
    nothing, nor does a thread's word for where it failed (docs/design.md §4, item 6)."""
    if floor is None or floor is Phase.LAUNCH:
        return "; no phase line or frame of a step places it: launch says only that a process ran"
    return f"; no phase line or frame of a step places it: its lines prove {floor} reached, not the step it failed in"


def _launched(phase: Phase | None, furthest: Phase | None) -> tuple[Phase, Phase]:
    """A process that failed, or reports itself stuck, was launched: a fragment of such lines alone
    reached `launch` at least (docs/design.md §4.4)."""
    return phase or Phase.LAUNCH, furthest or Phase.LAUNCH


def _sigkill(event: Event) -> bool:
    """A report of a signal another process sends (the shell's `Killed`, torchrun's `failed (exitcode: -9)`, its
    `-15`, Open MPI's `exited on signal 9 (Killed)`): the kernel's OOM killer, a scheduler, the program's own clean-up
    after its error. The process had no fatal error of its own: a failure before it did not end in a fatal signal,
    and alone it is a crash, not an abort (every labeller of the real-world batches reads SIGKILL so). SIGTERM is the
    other such signal: torch's agent sends it to the survivors first (torch 2.13.0 elastic/multiprocessing/api.py
    `_close`: `Sending process N closing signal SIGTERM`), a scheduler's cancel likewise. torchrun's `failed
    (exitcode: N)` is the worker's Popen returncode, minus its signal's number (errors/__init__.py ProcessFailure:
    `signal.Signals(-exitcode).name`, `Signal {-exitcode} ({name}) received by PID`), so the number tells the signal.
    A signal the process raised on itself (SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL: a fatal error of its own) stays
    an abort."""
    captures = event.captures
    # torchrun's failure table words it `traceback : Signal 9 (SIGKILL) received by PID N` (its `signame`); a
    # launcher that prints the number (mpirun's `exited on signal %d`, TGI's `with signal %d`): 9 is SIGKILL on Linux
    # (not 15: the agent's own `Received 15 death signal` is the job stopped from outside, an abort)
    signal = captures.get("signal", "").upper()
    named = signal in ("KILLED", "SIGKILL", "9") or captures.get("signame") in _SENT_SIGNALS
    return named or captures.get("exitcode") in ("-9", "-15")


# The signals another process sends to end one, by torchrun's name for them (its `signame`).
_SENT_SIGNALS = frozenset({"SIGKILL", "SIGTERM"})


def _job_bar(timeline: Timeline) -> Event | None:
    """A server used as a library runs a job, not a server: with no ready line, its latest progress is a bar
    over its own work in the serving phase (vLLM's offline `Processed prompts: 3/8`; a server's serving lines
    are marks, never a bar). Such a run finishes when the bar reaches its total (a bar
    filled once before, a bar per step, does not), else progresses or stalls."""
    progress = timeline.last_progress
    if timeline.ready is not None or progress is None:
        return None
    if progress.phase is not Phase.SERVING or progress.kind is not EventKind.PROGRESS:
        return None
    return progress if progress.captures.get("total") and progress.captures.get("done") is not None else None


def _clean_exit(timeline: Timeline) -> Event | None:
    """The last clean exit of a job (torchrun, a script: no server lines) whose every rank exited
    after its last phase line; None otherwise. A server that exits before it was ready did not
    finish anything."""
    # a server's engine driven as a library (`offline`: vLLM's LLM.generate in a script) runs a job that ends
    server = timeline.system_is_server and timeline.offline is None
    group = timeline.group_exit
    if server or not (timeline.ranks or timeline.exits or group):
        return None
    if group is not None:  # the launcher saw every worker it ran exit cleanly, after their phase lines
        # the untagged main process's too: a job that runs in it (a benchmark's runs) went on after an end line
        # that a later step of it follows; the end line may be its own last phase line (a result that says both).
        # A step is a line that progressed: one that repeats the step before it says no more (tqdm's `close()` draws a
        # full bar once more at its count: Lightning's epoch bar after `Trainer.fit` stopped, its training's end)
        states = (*timeline.ranks, timeline.main) if timeline.main is not None else timeline.ranks
        last_phase = max(((state.last_progress or state.last_event).order_key for state in states), default=None)
        if last_phase is None or group.order_key >= last_phase:
            return group
    if not timeline.ranks:  # a job's tail with no phase line: the ranks it names all exited cleanly
        return max(timeline.exits.values(), key=lambda event: event.order_key) if timeline.exits else None
    exits = [timeline.exits.get(state.rank) if state.rank else None for state in timeline.ranks]
    done = [event for event in exits if event is not None]
    return max(done, key=lambda event: event.order_key) if len(done) == len(exits) else None


def server_phase(timeline: Timeline) -> tuple[Phase | None, Phase | None]:
    """(phase of the slowest rank, phase of the fastest or the furthest a line proves reached: pack `reached`)
    — docs/design.md §4.5."""
    latest = timeline.latest_phase_event
    states = [_past_lazy_compile(state, latest) for state in _lockstep(timeline)]
    main = _past_lazy_compile(timeline.main, latest) if timeline.main is not None else None
    everyone = states + ([main] if main else [])
    if not everyone:
        return None, timeline.floor
    furthest = max(everyone, key=lambda state: state.position).reached
    if timeline.floor is not None and timeline.floor.order > furthest.order:
        furthest = timeline.floor  # a line proves more than the phase lines show (a collective timed out)
    if main is not None and main.reached in MAIN_PROCESS_PHASES:
        phase = main.reached
        if phase is Phase.WARMUP and any(_warmup_failed_after(main, state) for state in states):
            # the warmup failed after traffic reached a rank: the server never got past warmup (not ready, so
            # not serving either), whatever the traffic's lines showed
            furthest = Phase.WARMUP if furthest.order > Phase.WARMUP.order else furthest
        elif phase in (Phase.HTTP_START, Phase.WARMUP) and any(
            _progressed_in(state, Phase.SERVING) for state in states
        ):
            # a rank decoding real traffic (the warmup's few tokens never reach a decode batch):
            # a log that starts mid-run shows /generate requests the main process reads as warmup
            phase = Phase.SERVING
    elif states:
        phase = min(states, key=lambda state: state.position).current
    else:
        assert main is not None
        phase = main.current
    if phase not in (Phase.READY, Phase.SERVING) and latest is not None and latest.phase is Phase.COMPILE:
        phase = Phase.COMPILE  # lazy JIT is what the server is doing while it is the latest news
        if furthest.order < phase.order:
            # a rank's `reached` skips the lazy step (its later steps still follow in order), but the run did reach
            # it: the step it is in now is never beyond the furthest it reached
            furthest = phase
    return phase, furthest


def _past_lazy_compile(state: RankState, latest: Event | None) -> RankState:
    """A rank whose only step is a lazy compile, followed by a later step line of the run's in another phase: past
    it, in that phase. Compilation is no step of its own in the phase order: it runs inside whichever step first
    calls the code (vLLM V1's workers compile in the profiling run that sizes the KV cache, whose size the engine
    then prints; SGLang's JIT inside the capture), so the news after it, not the vocabulary's order, says where the
    run went on to."""
    if (
        state.reached is not Phase.COMPILE
        or latest is None
        or latest.phase in (None, Phase.COMPILE)
        or latest.order_key <= state.last_event.order_key
    ):
        return state
    after = latest.phase
    assert after is not None
    return replace(state, reached=after, current=after, position=(after.order, 0, 0))


def _warmup_failed_after(main: RankState, state: RankState) -> bool:
    """The main process's last line is the warmup's own failure, after the rank's latest progress. Traffic can reach
    the scheduler while the warmup request is still out (SGLang's http_server `_wait_and_warmup` sends it once the
    HTTP server answers, from a thread; a proxy in front may fail that request alone: realworld 137): the server never
    got past warmup, and only the warmup prints its failure (`Initialization failed. warmup error:`, then it kills
    the server), so the failure, not the traffic before it, says where the server was."""
    failure = main.last_event
    progress = state.last_progress
    return (
        failure.kind is EventKind.ERROR
        and failure.phase is Phase.WARMUP
        and progress is not None
        and failure.order_key > progress.order_key
    )


def _progressed_in(state: RankState, phase: Phase) -> bool:
    """The rank's own progress (not a failure that only places it) was last in `phase`."""
    return state.last_progress is not None and state.last_progress.phase is phase


def _lockstep(timeline: Timeline) -> list[RankState]:
    """The named ranks' states, where CUDA-graph capture runs the model's collectives: while rank 0's
    capture bar advances, every rank that finished its KV cache is capturing too, though only rank 0
    draws the bar."""
    if not any(span.phase is Phase.CUDA_GRAPH and span.progress and span.progress.done for span in timeline.spans):
        return list(timeline.ranks)
    # where the ranks print their own capture lines (SGLang's `Capture cuda graph begin` on each rank), a
    # rank without one while its peers have one never began: it is behind, not silently capturing
    printers = {span.rank for span in timeline.spans if span.phase is Phase.CUDA_GRAPH}
    states = []
    for state in timeline.ranks:
        if Phase.KV_CACHE.order <= state.position[0] < Phase.CUDA_GRAPH.order and (
            len(printers) < 2 or state.rank in printers
        ):
            position = (Phase.CUDA_GRAPH.order, 0, 0)
            current = Phase.COMPILE if state.current is Phase.COMPILE else Phase.CUDA_GRAPH
            state = replace(state, reached=Phase.CUDA_GRAPH, current=current, position=position)
        states.append(state)
    return states


def _first_root_failure(timeline: Timeline, after: Event | None, interrupt: Event | None = None) -> Event | None:
    """The first root failure in time, else the first cascade. A traceback counts with the role of
    its exception line (torchrun's own traceback ends in a cascade, ChildFailedError). A traceback
    the server survived — it said it was ready afterwards — is not why the run failed; nor is what
    a person's Ctrl-C set off: the interrupted traceback and every failure after the interrupt. A cut
    traceback under a bare header is no root (`_unstated`)."""
    failures = [
        e
        for e in timeline.failures
        if (after is None or e.order_key > after.order_key)
        and not _after_interrupt(e, interrupt)
        and _returned_before(timeline, e) is None
    ]
    roots = [
        event
        for event in failures
        if _exception_line(timeline, event).role is Role.ROOT and not _unstated(timeline, event)
    ]
    if roots:
        return roots[0]
    return failures[0] if failures else None


def _unstated(timeline: Timeline, event: Event) -> bool:
    """A header in CPython's own words alone (BARE_HEADER), or a rule's `header_only` line (a server's
    `logger.exception` header: vLLM's `EngineCore encountered a fatal error.`), whose exception line the log
    does not hold (a paste cut inside its frames, no `raise` statement read): it says that something was raised,
    never what. Not a root: a line that states the failure (a launcher's `failed (exitcode: 1)`, vLLM's `Worker
    proc … died`) is the cause; the header is only where nothing else is. So is a rule's `trailer_only` line, which
    only ends a dump whose head says what failed (faulthandler's `Extension modules: …`): another dump's
    `Fatal Python error: Segmentation fault` states it."""
    if event.rule.trailer_only:
        return True
    if not event.rule.opens_block or _exception_line(timeline, event) is not event:
        return False
    return event.rule.header_only or BARE_HEADER.fullmatch(event.message.strip()) is not None


def _nothing_placed(timeline: Timeline) -> str:
    """Why a run is unknown: no line matched a rule, or those that did say no step of the start, no failure and no
    end (a launcher's notes, a diagnostic mark): the second is no reason to think the log unread."""
    if timeline.events == 0:
        return "no line matched any pattern"
    return "no line read says a step of the start, a failure or an end (the lines matched are notes)"


def _returned_before(timeline: Timeline, failure: Event) -> Event | None:
    """The line that said the program's main returned (a rule's `main_returned`: ms-swift's `End time of running main`,
    printed by `SwiftPipeline.main` right after `self.run()` returned, the script's last statement) before this
    failure, where it speaks for the failing process: an unranked one speaks for the program, a rank's for that rank.
    A failure after it is the interpreter's exit (an atexit hook's exception, a destructor's abort and the launcher's
    `failed (exitcode: -6)` that reports it): the run finished before it (README: the first terminal event decides).
    None where no such line came before it."""
    returned = [
        event
        for rank, event in timeline.returned.items()
        if event.order_key < failure.order_key
        and (rank is None or _canonical(timeline, rank) == _canonical(timeline, failure.rank))
    ]
    return min(returned, key=lambda event: event.order_key) if returned else None


def _teardown(timeline: Timeline) -> tuple[str, ...]:
    """What failed at the interpreter's exit after the program's main returned, in words for a finished run's reason
    and doubts (an exit code says the process failed: the reader sees why the run is called finished); none where
    nothing did."""
    for failure in timeline.failures:
        returned = _returned_before(timeline, failure)
        if returned is not None:
            return (
                f"a failure after its main returned (line {returned.line}), at the interpreter's exit: "
                f"{_message(failure)} (line {failure.line})",
            )
    return ()


def _after_interrupt(event: Event, interrupt: Event | None) -> bool:
    if interrupt is None:
        return False
    same_block = interrupt.block is not None and (event.source, event.block) == (interrupt.source, interrupt.block)
    return same_block or event.order_key > interrupt.order_key


def _exception_line(timeline: Timeline, failure: Event) -> Event:
    """A traceback's last line says what failed; the line that opened it only says that. The further lines of
    that line's message (`tail`) go on saying it: the exception line is the one they follow."""
    if failure.block is None:
        return failure
    in_block = [
        e
        for e in timeline.failures
        if e.source == failure.source
        and e.block == failure.block
        and e.line > failure.line
        and e.kind in (EventKind.ERROR, EventKind.TIMEOUT)
        and not e.rule.opens_block
        and e.role is not Role.DIAGNOSTIC  # a hint read inside it (torchrun's `rank : 0`) says nothing failed
        and e.tail is None  # a further line of its message (a failure table's row, NCCL's `Last error:`)
    ]
    return in_block[-1] if in_block else failure


def _first_observed(timeline: Timeline, root: Event) -> Event:
    """A failure table that a traceback's exception prints as its message (torchrun's ChildFailedError,
    errors/__init__.py format_msg: the other workers' entries, then a rule's `first_failure` line, `Root Cause (first
    observed failure):`, and the entry of the worker that failed first) says how the run failed in that last entry:
    its first root line (`traceback : Signal 9 (SIGKILL) received by PID N`), else its first failure line (`exitcode
    : 1 (pid: N)`). That is the cause where the one chosen is the table's exception line or one of its rows: the
    other entries are later failures (the agent's SIGTERM / SIGKILL to the survivors), the exception line only says
    that a child failed. Where the excerpt cut the entry before its failure lines, the exception line stays the
    cause (labels split on which other entry would be: realworld 530, 617)."""
    if root.block is None:
        return root
    block = [e for e in timeline.failures if e.source == root.source and e.block == root.block]
    heads = [e for e in timeline.first_failures if e.source == root.source and e.block == root.block]
    if not heads:
        return root
    head = heads[-1]
    entry = [e for e in block if e.line > head.line and e.role is not Role.DIAGNOSTIC]
    stated = [e for e in entry if e.role is Role.ROOT] or entry
    if stated:
        return stated[0]
    # the entry is cut: the exception line its table is the message of, never another entry's row
    lines = [e for e in block if e.line < head.line and e.kind is EventKind.ERROR and e.tail is None]
    lines = [e for e in lines if e.role is not Role.DIAGNOSTIC and not e.rule.opens_block]
    return lines[-1] if lines else root


# the capture a cause quoted at its statement keeps: the exception line it stands for (the report's context is its)
EXCEPTION_LINE = "exception_line"


def _stated_by_statement(timeline: Timeline, root: Event) -> Event:
    """An exception line that names its class alone (`AssertionError`, `AssertionError:`; matcher.BARE_EXCEPTION)
    says what failed in the source line CPython quoted above it, the innermost frame's statement (`assert not
    server_args.disable_chunked_prefix_cache`): that line is the cause, read as the exception raised there; realworld
    985 and 999 label it. Where further lines of the message follow (a rule read them as its tail: torchrun's
    ChildFailedError, whose failure table is its message), those say it, and the exception line stays."""
    number = read_int(root.captures.get(STATEMENT_LINE))
    if number is None:
        return root
    continued = any(
        e.source == root.source and e.block == root.block and e.line > root.line and e.tail is Tail.MESSAGE
        for e in timeline.failures
    )
    if continued:
        return root
    kind = root.message.strip().removesuffix(":")
    message = f"{kind} (no message; the statement that raised it: {root.captures[STATEMENT]})"
    captures = {**root.captures, EXCEPTION_LINE: str(root.line)}
    return replace(root, line=number, text=root.captures[STATEMENT_TEXT], message=message, captures=captures)


def _innermost_frame(timeline: Timeline, root: Event) -> Event:
    """A traceback's first line (`Traceback (most recent call last):`, alone or after a logger's words: SGLang's
    `Scheduler hit an exception: Traceback …`; CPython's `Process …:` / `Exception in thread …:`) whose exception
    line the log does not hold says only that something was raised; its innermost whole frame says where (matcher
    `_cut_at_frame`): that frame is the cause. The labels' rule (fixtures/realworld/README.md, cut traceback)."""
    if not root.rule.opens_block or _exception_line(timeline, root) is not root:
        return root
    header = root.message.strip()
    if TRACEBACK_HEADER not in header and BARE_HEADER.fullmatch(header) is None:
        return root  # a server's own header (vLLM's `EngineCore encountered a fatal error.`) says what it was doing
    for event in timeline.failures:
        if (event.source, event.block) == (root.source, root.block) and event.captures.get(CUT_TRACEBACK) == FRAME_READ:
            return event
    return root


def _relayed(timeline: Timeline, root: Event) -> Event:
    """Ray relays a remote task's exception to the caller's `ray.get` as `RayTaskError(<Cls>)` (ray/exceptions.py
    `RayTaskError.as_instanceof_cause`: a class made on the fly, named after the cause's class), whose message is the
    remote's traceback with the task's name in place of its `Traceback` line (`RayTaskError.__str__`): the remote's
    frames, then its own exception line, `<module>.<Cls>: <message>`. The wrapper says where (`ray::Task.run()`), the
    relayed line what failed: where the message's own exception line of that class follows in the block, it is the
    cause. A rule's `relayed_class` capture names the class."""
    cause = root.captures.get(RELAYED_CLASS)
    if not cause or root.block is None:
        return root
    for event in timeline.failures:
        if (event.source, event.block) != (root.source, root.block) or event.line <= root.line or event.tail is None:
            continue
        named = EXCEPTION_CLASS.match(event.message)
        if named is not None and named["cls"] == cause:
            return event
    return root


def _named_collective(timeline: Timeline, root: Event) -> Event:
    """Torch's watchdog says one collective timeout in several lines (ProcessGroupNCCL.cpp's watchdog loop:
    `checkTimeout` logs `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=<seq>, OpType=<op>, …)
    ran for <ms> milliseconds`, then the same work's `Timeout at NCCL work: <seq>` (2.3) / `… detected by
    watchdog at work: <seq>` (2.4–2.5) / `failure detected by watchdog at work sequence id: <seq>` (2.6+),
    and the thread's `terminated with exception: <the same text>`), in whatever order a paste keeps them. A
    status line names only the sequence number: the line of the same work (SeqNum) that names its operation
    and time says the failure; this rank's first, else the first of any rank while they agree on the
    operation (process groups number their works apart: another group's work of the same number names
    another operation). The status line's counters stay with it (they place the collective)."""
    captures = root.captures
    seq = captures.get("seq")
    if root.kind is not EventKind.TIMEOUT or not seq or captures.get("op"):
        return root
    named = [e for e in timeline.failures if e.kind is EventKind.TIMEOUT and e.captures.get("seq") == seq]
    named = [e for e in named if e.captures.get("op") and e.role is Role.ROOT]
    own = [e for e in named if e.rank == root.rank]
    if not own and len({e.captures["op"] for e in named}) != 1:
        return root
    chosen = (own or named)[0]
    return replace(chosen, captures={**captures, **chosen.captures})


def _failure_culprits(timeline: Timeline, root: Event, failure: Event) -> tuple[str, ...]:
    """The rank to look at: the one that failed while others did not — or, when every failure
    is a consequence (watchdog timeouts, post-load barrier errors), the ranks that said nothing."""
    visible = _visible_ranks(timeline)
    failed = {_canonical(timeline, e.rank) for e in timeline.failures}
    silent = [rank for rank in visible if rank not in failed]
    collective = failure.kind is EventKind.TIMEOUT and bool(timeline.work)
    if collective:
        # a collective hangs on the rank that never joined: every other rank's watchdog fires
        timed_out = {_canonical(timeline, e.rank) for e in timeline.failures if e.role is Role.ROOT}
        missing = [rank for rank in visible if rank not in timed_out]
        return tuple(missing) if 0 < len(missing) < len(visible) else _behind_in_collectives(timeline)
    if Role.CASCADE in (failure.role, root.role):
        if 0 < len(silent) < len(visible):
            behind = set(_lagging_ranks(timeline, grace=False))
            lagging = [rank for rank in silent if rank in behind]
            return tuple(lagging or silent)
        return ()
    rank = _canonical(timeline, root.rank)
    others_healthy = any(other != rank for other in silent)
    return (rank,) if rank is not None and rank in visible and others_healthy else ()


def visible_ranks(timeline: Timeline) -> list[str]:
    """Every rank the log shows, in order: the report counts them all (a rank with a line is a rank)."""
    return _visible_ranks(timeline)


def _visible_ranks(timeline: Timeline) -> list[str]:
    """Ranks the log shows: those with phases, and every other rank a line prefix named."""
    named = {state.rank for state in timeline.ranks if state.rank is not None}
    named |= {_canonical(timeline, rank) or rank for rank in timeline.visible_ranks}
    tagged = any(is_tagged(rank) for rank in named)
    return sorted((rank for rank in named if is_tagged(rank) or not tagged), key=rank_sort_key)


def _behind_in_collectives(timeline: Timeline) -> tuple[str, ...]:
    """Ranks the torch watchdog counters show behind: fewer collectives enqueued than the others
    (it never issued the one they wait in), else fewer completed. Alone in the log, a rank with
    nothing in flight (enqueued == completed) while a timeout was reported is not in the
    collective that timed out: it is the one missing from it. Ranks whose watchdogs report different
    collectives (another sequence number) are in different process groups: their counters do not compare."""
    if len({w.seq for w in timeline.work if w.seq is not None}) > 1:
        return ()
    for counts in (
        {w.rank: w.last_enqueued for w in timeline.work if w.last_enqueued is not None},
        {w.rank: w.last_completed for w in timeline.work if w.last_completed is not None},
    ):
        if len(set(counts.values())) > 1:
            lowest = min(counts.values())
            return _ranks(timeline, (rank for rank, count in counts.items() if count == lowest))
    idle = [w.rank for w in timeline.work if w.last_enqueued is not None and w.last_enqueued == w.last_completed]
    return _ranks(timeline, idle) if len(idle) == len(timeline.work) == 1 else ()


def _ranks(timeline: Timeline, ranks: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted((_canonical(timeline, rank) or rank for rank in ranks), key=rank_sort_key))


def _lagging_ranks(timeline: Timeline, *, grace: bool = True) -> tuple[str, ...]:
    """Ranks behind the rest: an earlier position than the furthest ranks', or an NCCL init that
    never completed. Once the main process serves HTTP every rank finished its init."""
    pending: set[str] = set()
    for comm in timeline.comms:
        missing = comm.started - comm.completed
        if comm.completed and missing:
            pending |= missing
    if pending:
        return tuple(sorted((_canonical(timeline, r) or r for r in pending), key=rank_sort_key))
    if timeline.main is not None and timeline.main.reached in MAIN_PROCESS_PHASES:
        return ()
    states = [s for s in _lockstep(timeline) if s.rank is not None]
    if len(states) < 2:
        return ()
    ahead = max(state.position for state in states)
    behind = [state.rank for state in states if state.position < ahead and state.rank is not None]
    if not behind or len(behind) >= len(states):
        return ()
    # ranks a few seconds apart are skew, not a culprit: the others must be ahead for a while
    leaders = {state.rank for state in states if state.position == ahead}
    arrived = [
        (span.end if ahead[2] else span.start)
        for span in timeline.spans
        if span.rank in leaders and span.phase.order == ahead[0] and (span.end if ahead[2] else span.start)
    ]
    last = timeline.last_time
    if grace and arrived and last is not None and (last - min(a for a in arrived if a)).total_seconds() < LAG_GRACE_S:
        return ()
    return tuple(behind)


def _behind(timeline: Timeline, culprits: tuple[str, ...], furthest: Phase | None) -> str:
    """The ranks behind and where they stopped, said first: `TP3 never began cuda_graph (last line 45:
    Memory pool end. avail mem=40.00 GB): `; empty when no rank is behind."""
    said = []
    for rank in culprits[:BEHIND_SAID]:
        state = timeline.rank_state(rank)
        pending = any(rank in {_canonical(timeline, r) for r in c.started - c.completed} for c in timeline.comms)
        if state is None:
            said.append(f"{rank} never completed its NCCL init" if pending else f"{rank} is behind")
            continue
        where = f"stopped in {state.current}"
        if pending:
            where = "never completed its NCCL init"
        elif furthest is not None and state.reached.order < furthest.order:
            where = f"never began {furthest}"
        last = state.last_event
        said.append(f"{rank} {where} (last line {last.line}: {_message(last, BEHIND_TEXT)})")
    if len(culprits) > BEHIND_SAID:
        said.append(f"and {len(culprits) - BEHIND_SAID} more ranks behind")
    return "; ".join(said) + ": " if said else ""


# The ranks behind named in a reason, and the length of the last line quoted for each.
BEHIND_SAID = 3
BEHIND_TEXT = 60


def _canonical(timeline: Timeline, rank: str | None) -> str | None:
    """`rank 3` (NCCL, torch) is `TP3` in a log whose ranks carry SGLang tags, when unambiguous."""
    if rank is None or is_tagged(rank):
        return rank
    matches = timeline.tagged_by_number.get(rank_number(rank), ())
    return matches[0] if len(matches) == 1 else rank


def _message(event: Event, width: int = 160) -> str:
    text = event.message.strip()
    return text if len(text) <= width else text[: width - 3] + "..."
