"""Events → per-rank phase spans, progress and the last evidence of each kind (pure)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cached_property

from logphase.bounded import read_int, read_rank
from logphase.logs import records
from logphase.logs.matcher import CUT_KIND, CUT_LEAD, CUT_ROLE, FALLBACK_PACK, FRAMES_PACK, PLACED_BY, Event, frame_rule
from logphase.packs import PackRegex, shipped_packs
from logphase.phases import FAILURE_KINDS, MAIN_PROCESS_PHASES, EventKind, Phase, Role

# Enough failures to find the first root and what followed it; a crash loop adds no information.
MAX_FAILURES = 2000
# Ranks followed line by line (phases, progress, counters, exits): the largest real deployments log
# a few thousand. A rank's accumulators take ~1.5 KB, so a log naming more (a crafted one: 200,000
# ranks were 400 MB) has the ranks after these counted, not followed, and the report says so.
MAX_RANKS = 4096
# The phases a speculative draft worker repeats after the target's CUDA graphs (SGLang ≤0.5.10).
DRAFT_REPEATED = frozenset({Phase.DIST_INIT, Phase.WEIGHT_LOAD, Phase.KV_CACHE, Phase.CUDA_GRAPH})
# The captures this module reads from an event. Every event with one of TIMELINE_CAPTURES counts:
# the fast path never summarises a rule with one. Of LATEST_CAPTURES only the newest event counts,
# and the last line of a summarised run is always read: such rules may be summarised. A health answer
# (`health_status`) counts only as the newest, but a refusal (`health_refused`, a 503 of a warming server)
# counts each time: the report says how many a start-up gave, while a serving server's probes every few
# seconds for hours are summarised.
TIMELINE_CAPTURES = frozenset(
    {
        "version",
        "comm",
        "nranks",
        "seq",
        "last_enqueued",
        "last_completed",
        "done",
        "total",
        "desc",
        "health_refused",
        "offline",
    }
)
LATEST_CAPTURES = frozenset({"health_status", "in_flight", "waiting", "asleep"})
# A server's own stats line counts the requests it holds: `in_flight` those it runs and keeps printing its stats
# lines for while they last (vLLM's `Running: N reqs`, the TensorRT-LLM backend's `Active Request Count`), `waiting`
# those queued for admission (vLLM's `Waiting`/`Pending`, SGLang's `#queue-req`). Only the newest line counts.
LOAD_CAPTURES = frozenset({"in_flight", "waiting"})
DRAFT_STAGE_INIT, DRAFT_STAGE_CAPTURE = 1, 2
RANK_NUMBERS = re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP|rank )(\d+)")
# tqdm's own clock on a bar line: `| 11/24 [00:21<00:25,  1.95s/it]` (`{n_fmt}/{total_fmt} [{elapsed}<{remaining},
# {rate_fmt}]`; an interval is `[H:]MM:SS`, tqdm.format_interval). Bars carry no timestamp: this dates them.
# Hours are bounded: a line is untrusted input, and a bar that ran for a million hours is no bar.
BAR_CLOCK = re.compile(r"\[(?P<elapsed>(?:\d{1,6}:)?\d{1,2}:\d{2})<(?P<remaining>(?:\d{1,6}:)?\d{1,2}:\d{2}|\?)")
# A tqdm tick's percentage and its count: tqdm's every format (its default `{l_bar}{bar}{r_bar}`, whose r_bar ends
# `{postfix}]`, and the `… Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]` bar_format SGLang and
# vLLM give their loaders) ends the line with `]`, and prints its count `n/total` before its clock. A tick the input
# ended inside (a paste's cut, a line still being written) before the end of its count (`… shards: 100%`, `… 9/1`,
# whose total may be `16` or `163`) has not said how far the bar got: the whole tick before it says it. One whose count
# came whole (`… 134/163 [00:41<00:08,  3.57it`) said it: the furthest the bar got (labels: realworld 600, 959). A
# count the line ends on is whole where the tick's own percentage is its fraction: tqdm.std.format_meter prints
# `f'{n / total * 100:3.0f}%'` from the same n and total, so `58%| … | 39/67` is whole (39/67 is 58 %) and `… 39/6`
# is cut (39/6 is 650 %) (realworld 1040).
TQDM_PERCENT = re.compile(r"\d{1,3}%")
WHOLE_COUNT = re.compile(r"\d+/\d+\s")
ENDING_COUNT = re.compile(r"(?P<percent>\d{1,3})%[^%]*?(?<![\d.])(?P<n>\d{1,9})/(?P<total>\d{1,9})$")


def count_cut(event: Event) -> bool:
    """Whether `event` is a tqdm tick whose line ends before the end of its count (TQDM_PERCENT, WHOLE_COUNT)."""
    message = event.message.rstrip()
    return (
        event.kind is EventKind.PROGRESS
        and TQDM_PERCENT.search(message) is not None
        and not message.endswith("]")
        and WHOLE_COUNT.search(message) is None
        and not _count_agrees(message)
    )


def _count_agrees(message: str) -> bool:
    """Whether the count `message` ends on is the tick's whole count: its percentage is tqdm's for that n and total
    (ENDING_COUNT). A count cut inside its total is a tenth (or less) of it, its fraction ten times (or more) the
    printed one. At 0 % no cut changes the fraction (`0/6` of `0/67`): the percentage cannot tell, and it stays cut."""
    ending = ENDING_COUNT.search(message)
    if ending is None:
        return False
    n, total = int(ending["n"]), int(ending["total"])
    return n > 0 and total > 0 and f"{n / total * 100:3.0f}".strip() == ending["percent"]


@dataclass
class _ProgressUndo:
    """What a source's newest progress event changed, kept until the next one: where the source ends inside that
    event's line (a fragment, `TimelineBuilder.fragment_at_end`), the whole line before it is put back."""

    event: Event
    acc: _RankAcc
    rank_progress: Event | None
    last_progress: Event | None
    progress_span: _SpanAcc | None
    latest_phase_event: Event | None
    span: _SpanAcc
    bar: tuple[datetime | None, int, int | None] | None


@dataclass(frozen=True, slots=True)
class Progress:
    """Where a progress bar stands: `done` of `total`, and its rate over the bar's updates."""

    done: int
    total: int | None
    rate_per_s: float | None


# The roles of a note printed while a step runs: a communicator's abort or a peer's closing (lifecycle) says the process
# is ending, not where it is; a hang report (root, cascade) is judged as one (docs/design.md §4.4).
_NOTES = frozenset({Role.DIAGNOSTIC, Role.PROGRESS})


@dataclass(frozen=True)
class BarPace:
    """A progress bar short of its total at the run's newest progress: how it has been ticking. Its
    ticks are dated by tqdm's own elapsed time where they carry no stamp (`DatedTicks`)."""

    phase: Phase
    rank: str | None
    done: int
    total: int
    last_tick: Event
    ticks: int  # ticks that advanced it, its first one included
    slowest_tick_s: float | None  # the longest wait between two of its advancing ticks; None with one tick
    remaining_s: float | None  # tqdm's own estimate at its newest tick


@dataclass(frozen=True)
class DatedTicks:
    """Progress-bar ticks of one rank whose time was inferred: their line had no stamp, so each is
    dated by the bar's own `[elapsed<remaining]` from the bar's start, not by the last stamp before it."""

    rank: str | None
    count: int
    first_line: int
    last_line: int


@dataclass(frozen=True)
class InputFacts:
    """What one input's recognised lines say of its run: the server system they name, and when they ran."""

    source: int
    system: str | None  # the server system most of its lines name (a job's torch lines name none)
    first_time: datetime | None
    last_time: datetime | None


@dataclass(frozen=True, slots=True)
class PhaseSpan:
    """One rank's time in one phase (a draft worker's spans are separate: `draft`)."""

    phase: Phase
    rank: str | None
    draft: bool
    source: int
    start_line: int
    end_line: int
    start: datetime | None
    end: datetime | None
    ended: bool
    progress: Progress | None
    gaps: int = 0  # waits between the rank's consecutive timed lines in this phase (its marks aside)
    longest_gap_s: float | None = None  # the longest of them

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, (self.end - self.start).total_seconds())


@dataclass(frozen=True, slots=True)
class RankState:
    """How far one rank got. `current` is `compile` while lazy compilation is its latest news;
    `position` orders ranks: the phase reached, then the draft block after the target's graphs,
    then whether the phase ended."""

    rank: str | None
    reached: Phase
    current: Phase
    position: tuple[int, int, int]
    last_progress: Event | None
    last_event: Event


@dataclass(frozen=True)
class CommInit:
    """An NCCL communicator's init as the log shows it: which ranks started and completed."""

    comm: str
    nranks: int | None
    started: frozenset[str]
    completed: frozenset[str]


@dataclass(frozen=True)
class WorkCounters:
    """A torch watchdog's view of one rank: the collective that timed out and its counters."""

    rank: str
    seq: int | None
    last_enqueued: int | None
    last_completed: int | None


@dataclass(frozen=True)
class Timeline:
    spans: tuple[PhaseSpan, ...]
    ranks: tuple[RankState, ...]  # the ranks the server names (TP3, DP0 TP3, rank 1), in order
    main: RankState | None  # the untagged main process
    failures: tuple[Event, ...]  # in time order
    ready: Event | None
    last_progress: Event | None
    latest_phase_event: Event | None
    visible_ranks: frozenset[str]  # every rank a prefix named, matched or not
    served: bool  # a line of the server itself (not a frame of a dump, nor the engine's own work alone) says it serves
    health: Event | None  # the newest answer of the health route (a `health_status` capture)
    interrupt: Event | None  # the first time a person stopped it (Ctrl-C)
    hang: Event | None  # the first hang report (kind mark, role root, else cascade) since the last progress
    exits: Mapping[str, Event]  # per rank, its clean exit, when no phase line of it came after
    # a launcher's word that every worker it ran exited cleanly (torchrun's `worker group successfully finished`)
    group_exit: Event | None
    system: str | None
    system_is_server: bool  # a system, and not a job's (a pack with `job = true`: torchrun)
    version: str | None
    comms: tuple[CommInit, ...]
    work: tuple[WorkCounters, ...]
    events: int
    first_time: datetime | None
    last_time: datetime | None
    bar: BarPace | None = None  # the bar of the newest progress, while it is short of its total
    # the newest progress is a bar that had filled before, other lines between: a bar per step, whose fill ends
    # a step and not the job (prime-rl's `Generating rollouts` bar, full once per orchestrator step)
    step_bar: bool = False
    dated: tuple[DatedTicks, ...] = ()  # ranks whose bar ticks were dated from the bars' own clocks
    inputs: tuple[InputFacts, ...] = ()  # per input (source), for a run given as several logs
    unfollowed: int = 0  # ranks past the first MAX_RANKS: their lines counted, their phases not followed
    floor: Phase | None = None  # the furthest phase a line proves was reached without being in it (pack `reached`)
    # the newest note printed while a step runs that names no phase of its own (a `reached` mark, not a lifecycle
    # line: torch's capture waiting for pending NCCL work): where a run with no phase line is (judging/logs.py)
    noted_step: Event | None = None
    # the health route's refusals the log shows (`health_refused`), counted by status (`503`) in the order each
    # first came, and the first of them
    health_answers: tuple[tuple[str, int], ...] = ()
    health_first: Event | None = None
    health_last: Event | None = None  # the newest refusal counted; `health` is the newest answer of all
    # the lines that head a failure table's first observed failure (a rule's `first_failure`: torchrun's `Root Cause
    # (first observed failure):`), hints that say which of the table's rows is the cause (judging/logs.py)
    first_failures: tuple[Event, ...] = ()
    # the phases only a fallback placed (a line no rule read, placed by its logger's module: `[[module]]`), each with
    # the first such line; a phase a rule's line placed too is not here
    placed_by_module: Mapping[Phase, Event] = field(default_factory=dict)
    # the phases only a stack's frames placed (a dump's thread, a traceback's frames: matcher `_note_frame`), each with
    # the first frame group's event; a phase a rule's line placed too is not here
    placed_by_frames: Mapping[Phase, Event] = field(default_factory=dict)
    # a tqdm tick the input ended inside (`TimelineBuilder.fragment_at_end`): the whole tick before it is the progress
    fragment: Event | None = None
    # the newest line, over every rank and rule, that reports a step of the run (`reports_step`): where an open run
    # stopped (fixtures/realworld/README.md, `root_cause_line`: the last progress line)
    latest_step: Event | None = None
    # the newest line of the server's own stats that counts its requests (LOAD_CAPTURES: vLLM's `Running: N reqs,
    # Waiting: N reqs`, SGLang's `#queue-req: N`, the TensorRT-LLM backend's `Active Request Count`)
    load: Event | None = None
    # the newest line that put the engine to sleep (vLLM's sleep mode, a rule's `asleep` capture) with no serving
    # line after it: an engine asleep serves nothing until it is woken
    asleep: Event | None = None
    # the first line that says a server's engine runs as a library, its own driver feeding it prompts (a rule's
    # `offline` capture: SGLang's diffusion DiffGenerator `Processing prompt 1/4`): a job, which is never ready
    offline: Event | None = None
    # the newest line of progress or of a step that prints no configuration, and the lines that do (a server's argument
    # dump, a pack's `[[server_args]]`): the README passes a dump over, back to the progress line before it
    latest_told: Event | None = None
    dump_lines: frozenset[tuple[int, int]] = frozenset()
    # the newest line no rule read that reports a step by its structure (`TimelineBuilder.note_unread_step`)
    unread_step: Event | None = None
    # per rank (None: a line that speaks for the whole program), the first line that says its main returned (a rule's
    # `main_returned`: ms-swift's `End time of running main`): what fails after it is the interpreter's exit
    returned: Mapping[str | None, Event] = field(default_factory=dict)

    def rank_state(self, rank: str | None) -> RankState | None:
        if rank is None:
            return self.main
        return self._states.get(rank)

    @cached_property
    def _states(self) -> dict[str | None, RankState]:
        return {state.rank: state for state in self.ranks}

    @cached_property
    def tagged_by_number(self) -> Mapping[int | None, tuple[str, ...]]:
        """The tagged ranks (`TP3`, `DP0 TP3`) by their TP number: how `rank 3` is matched to a tag."""
        found: dict[int | None, list[str]] = {}
        for state in self.ranks:
            if state.rank is not None and is_tagged(state.rank):
                found.setdefault(rank_number(state.rank), []).append(state.rank)
        return {number: tuple(ranks) for number, ranks in found.items()}


def rank_sort_key(rank: str | None) -> tuple[int, ...]:
    if rank is None:
        return (-1,)
    return tuple(read_rank(number) or 0 for _, number in RANK_NUMBERS.findall(rank)) or (10**6,)


def is_tagged(rank: str) -> bool:
    return not rank.startswith("rank ")


def rank_number(rank: str) -> int | None:
    """The rank's TP (or global) number: `DP0 TP3` → 3, `rank 5` → 5."""
    found = dict(RANK_NUMBERS.findall(rank))
    for key in ("TP", "rank "):
        if key in found:
            return read_rank(found[key])
    return None


@dataclass(slots=True)
class _SpanAcc:
    phase: Phase
    rank: str | None
    draft: bool
    source: int
    start_line: int
    end_line: int
    start: datetime | None
    end: datetime | None
    ended: bool = False
    first_bar: tuple[datetime | None, int] | None = None
    bar: tuple[datetime | None, int, int | None] | None = None
    last_begin_text: str | None = None  # set once a begin line opened the phase
    last_progress_text: str | None = None
    bar_start: datetime | None = None  # the current bar's start as its ticks show it (a lower bound)
    tick: datetime | None = None  # the time of the current bar's newest advancing tick
    ticks: int = 0  # the current bar's advancing ticks
    slowest_tick_s: float | None = None  # the longest wait between two advancing ticks of the current bar
    remaining_s: float | None = None  # tqdm's estimate at the newest tick
    gaps: int = 0  # waits between the rank's consecutive timed lines in the phase (marks aside)
    longest_gap_s: float | None = None
    seen: datetime | None = None  # the newest time of a line of the rank in the phase


@dataclass(slots=True)
class _RankAcc:
    rank: str | None
    reached: Phase | None = None
    latest_phase: Phase | None = None
    last_progress: Event | None = None
    last_event: Event | None = None
    spans: dict[tuple[Phase, bool], _SpanAcc] = field(default_factory=dict)
    draft_stage: int = 0  # after the target's graphs: 1 the draft's init, 2 the draft's capture


# the steps only a server goes through (an offline engine in a script has no HTTP server, warmup or ready line)
_SERVER_PHASES = frozenset({Phase.HTTP_START, Phase.WARMUP, Phase.READY, Phase.SERVING})


@dataclass
class TimelineBuilder:
    """Feed events of each source in order (sources may come one after the other); `finish`."""

    ranks: dict[str | None, _RankAcc] = field(default_factory=dict)
    lowest_rank: str | None = None  # the named rank that sorts first: tqdm bars are its (kept, not searched)
    failures: list[Event] = field(default_factory=list)
    first_failures: list[Event] = field(default_factory=list)
    ready: Event | None = None
    last_progress: Event | None = None
    latest_phase_event: Event | None = None
    systems: Counter[str] = field(default_factory=Counter)
    implied: Counter[str] = field(default_factory=Counter)  # systems generic lines imply (pack `implies`)
    version: str | None = None
    comm_started: dict[str, set[str]] = field(default_factory=dict)
    comm_completed: dict[str, set[str]] = field(default_factory=dict)
    comm_nranks: dict[str, int] = field(default_factory=dict)
    work: dict[str, WorkCounters] = field(default_factory=dict)
    events: int = 0
    first_time: datetime | None = None
    last_time: datetime | None = None
    served: bool = False
    engine_served: bool = False  # an `engine_work` line in serving: the engine's own batches
    server_spoke: bool = False  # a line of the server's own (not the engine's work) from HTTP start on
    health: Event | None = None
    health_first: Event | None = None
    health_last: Event | None = None
    health_answers: Counter[str] = field(default_factory=Counter)
    interrupt: Event | None = None
    hangs: list[Event] = field(default_factory=list)  # hang reports since the newest progress
    visible: set[str] = field(default_factory=set)
    exits: dict[str, Event] = field(default_factory=dict)
    progress_span: _SpanAcc | None = None  # the span of `last_progress`
    dated: dict[str | None, list[int]] = field(default_factory=dict)  # per rank: lines of ticks dated by their bar
    source_systems: dict[int, Counter[str]] = field(default_factory=dict)
    source_times: dict[int, tuple[datetime, datetime]] = field(default_factory=dict)
    group_exit: Event | None = None
    returned: dict[str | None, Event] = field(default_factory=dict)  # Timeline.returned
    floor: Phase | None = None
    noted_step: Event | None = None
    module_placed: dict[Phase, Event] = field(default_factory=dict)  # a phase's first line a fallback placed
    rule_placed: set[Phase] = field(default_factory=set)  # the phases a rule's line placed
    # a phase's first frame group (a dump's thread, a traceback's frames)
    frame_placed: dict[Phase, Event] = field(default_factory=dict)
    followed: set[str] = field(default_factory=set)  # the named ranks followed, at most MAX_RANKS
    # per bar of a job's steps (rank, rule, description, total): the line of its newest fill; and the bars that
    # filled again after another line came between (a bar per step: its fill ends the step, not the job)
    bar_fills: dict[tuple[str | None, str, str, str], tuple[int, int]] = field(default_factory=dict)
    refilled: set[tuple[str | None, str, str, str]] = field(default_factory=set)
    unfollowed: set[str] = field(default_factory=set)  # the named ranks past them: counted only
    # systems that are jobs, not servers (packs with `job = true`); a caller with its own packs passes theirs
    job_systems: frozenset[str] = field(default_factory=lambda: shipped_packs().job_systems)
    # per source: what its newest progress changed (`fragment_at_end`)
    undo: dict[int, _ProgressUndo] = field(default_factory=dict)
    fragment: Event | None = None  # the tick the input ended inside, its whole line before it quoted instead
    latest_step: Event | None = None  # the newest line that reports a step (`reports_step`), any rank's, any rule's
    latest_told: Event | None = None  # the newest step or progress of the lines that dump no configuration (`dumps`)
    dump_lines: set[tuple[int, int]] = field(default_factory=set)  # (source, line) of the progress lines that do
    unread_step: Event | None = None  # the newest line no rule read that reports a step (`note_unread_step`)
    # where the systems print their arguments (packs' `[[server_args]]`): a line of them reports the set-up, not a step
    dumps: tuple[PackRegex, ...] = field(default_factory=lambda: shipped_packs().dump_patterns)
    # per rule, its newest line's words with each run of digits one `0` (`_new_item`)
    step_rules: dict[str, str] = field(default_factory=dict)
    bar_rules: set[str] = field(default_factory=set)  # the rules whose lines were a bar's ticks (a `done` count)
    load: Event | None = None  # the newest stats line that counts the server's requests (LOAD_CAPTURES)
    offline: Event | None = None  # the first line that says the server runs as a library (an `offline` capture)
    asleep: Event | None = None  # the newest line that put the engine to sleep, no serving line after it

    def see_ranks(self, ranks: Iterable[str]) -> None:
        """Ranks whose lines the log shows, recognised or not (a training step, a warning)."""
        self.visible.update(ranks)

    def restart(self) -> Timeline:
        """The server started again in the same log (a restarted container's `docker logs`, a
        relaunch appended to the file): the start so far, finished; the builder begins anew."""
        finished = self.finish()
        fresh = TimelineBuilder(job_systems=self.job_systems, dumps=self.dumps)
        self.__dict__.update(fresh.__dict__)
        return finished

    def add(self, event: Event) -> None:
        if event.kind is not EventKind.PROGRESS:
            # a bar's tick is noted once its rank (`_owner`) and time (`_dated`) are its own
            self._note_step(event)
        if event.rule.pack == FRAMES_PACK and event.phase is Phase.SERVING and self._starting_http():
            # a serving loop's frame (SGLang's scheduler event loop) while the main process is still starting
            # its HTTP server, no ready line yet: the loop runs the warmup request (http_server
            # `_wait_and_warmup` sends it there). A log that starts mid-run shows no such start: serving.
            event = replace(event, rule=frame_rule(Phase.WARMUP))
        elif event.rule.after_ready is not None and self.ready is not None and event.order_key > self.ready.order_key:
            # the warmup request's kind of line after the ready line: a real request's (pack `after_ready`)
            event = replace(event, rule=event.rule.past_ready)
        self.events += 1
        if event.time is not None:
            self.first_time = min(self.first_time or event.time, event.time)
            self.last_time = max(self.last_time or event.time, event.time)
        if event.time is not None:
            first, last = self.source_times.get(event.source, (event.time, event.time))
            self.source_times[event.source] = (min(first, event.time), max(last, event.time))
        if event.rule.system:
            self.systems[event.rule.system] += 1
            if event.rule.system not in self.job_systems:
                self.source_systems.setdefault(event.source, Counter())[event.rule.system] += 1
        elif event.rule.implied_system:
            self.implied[event.rule.implied_system] += 1
        if "version" in event.captures and self.version is None:
            self.version = event.captures["version"]
        self._note_counters(event)
        reached = event.rule.reached
        if reached is not None and (self.floor is None or reached.order > self.floor.order):
            self.floor = reached
        if reached is not None and event.phase is None and event.kind is EventKind.MARK and event.rule.role in _NOTES:
            self.noted_step = event
        if "health_status" in event.captures:
            if "health_refused" in event.captures:
                self.health_answers[event.captures["health_refused"]] += 1
                if self.health_first is None or event.order_key < self.health_first.order_key:
                    self.health_first = event
                if self.health_last is None or event.order_key >= self.health_last.order_key:
                    self.health_last = event
            if self.health is None or event.order_key >= self.health.order_key:
                self.health = event  # kept before any phase logic: a 503 after `serving` is news
        failed = event.kind in FAILURE_KINDS
        if failed and event.role in (Role.ROOT, Role.CASCADE) and len(self.failures) < MAX_FAILURES:
            self.failures.append(event)
        if event.rule.first_failure and len(self.first_failures) < MAX_FAILURES:
            self.first_failures.append(event)
        if event.kind is EventKind.READY and self.ready is None:
            self.ready = event
        if event.kind is EventKind.INTERRUPT and (self.interrupt is None or event.order_key < self.interrupt.order_key):
            self.interrupt = event
        if event.kind is EventKind.EXIT:
            returned = self.returned.get(event.rank)
            if event.rule.main_returned and (returned is None or event.order_key < returned.order_key):
                self.returned[event.rank] = event
            if event.rank is not None:
                if self._follows(event.rank):
                    self.exits[event.rank] = event
            else:
                self.group_exit = event
        # the program says it waits on something that does not come (root), or shows that nothing moves
        # (cascade: repeated every few seconds while it lasts, and only its first since the progress counts)
        if (
            event.kind is EventKind.MARK
            and len(self.hangs) < MAX_FAILURES
            and (
                event.role is Role.ROOT
                or (event.role is Role.CASCADE and not any(h.role is Role.CASCADE for h in self.hangs))
            )
        ):
            self.hangs.append(event)
        if not failed and LOAD_CAPTURES & event.captures.keys() and _newer(event, self.load):
            self.load = event
        if "offline" in event.captures and (self.offline is None or event.order_key < self.offline.order_key):
            self.offline = event
        if event.phase is None:
            return
        if event.rank is not None and not self._follows(event.rank):
            return
        if event.rank is not None and not failed:
            self.exits.pop(event.rank, None)  # the rank went on after its exit line (a new communicator)
        if event.rule.ambient and event.rank is None and self._later_step_open(event.phase):
            # a line any process prints whenever it uses the phase's machinery (NCCL's setup lines while a capture
            # or a collective builds a communicator) is in the step around it: neither that step's progress nor a
            # return to its own phase (nor, past the graphs, a draft worker's)
            return
        rank = self._owner(event)
        if rank != event.rank:
            event = replace(event, rank=rank)
        acc = self.ranks.get(rank)
        if acc is None:
            acc = self.ranks[rank] = _RankAcc(rank)
            if rank is not None and (self.lowest_rank is None or rank_sort_key(rank) < rank_sort_key(self.lowest_rank)):
                self.lowest_rank = rank
        phase, draft = self._effective_phase(event, acc)
        if event.kind is EventKind.MARK and acc.reached is not None and phase.order < acc.reached.order:
            return  # a mark of a phase the rank has left: an NCCL line while serving, a late /generate
        span = acc.spans.get((phase, draft))
        # a failure shows where the rank was (a warmup error: it reached warmup), never progress
        progressed = not failed and self._is_progress(event, span)
        if span is None:
            span = _SpanAcc(phase, rank, draft, event.source, event.line, event.line, event.time, event.time)
            acc.spans[(phase, draft)] = span
        if event.kind is EventKind.PROGRESS:
            event = self._dated(event, span)
            self._note_step(event)
            if event.time is not None and self.last_time is not None:
                self.last_time = max(self.last_time, event.time)  # the log went on at least this long
        undo = None
        if progressed:
            undo = _ProgressUndo(
                event,
                acc,
                acc.last_progress,
                self.last_progress,
                self.progress_span,
                self.latest_phase_event,
                span,
                span.bar,
            )
        if not failed:  # a failure places the rank; it does not stretch the phase to the crash
            self._extend(span, event)
        acc.last_event = event
        if phase is not Phase.COMPILE:
            # a lazy compile as the rank's first step placed it only until its next step: compilation runs inside
            # whichever step first calls the code (vLLM V1's profiling run, before the KV cache is sized), so the
            # step that follows, not the vocabulary's order, says where the rank went on to
            later = acc.reached is None or acc.reached is Phase.COMPILE or phase.order > acc.reached.order
            acc.reached = phase if later else acc.reached
        elif acc.reached is None:
            acc.reached = phase
        acc.latest_phase = phase
        # the ≤0.5.10 draft block comes after the target's graphs: a rank in it is past cuda_graph
        if phase is Phase.DRAFT_INIT:
            acc.draft_stage = max(acc.draft_stage, DRAFT_STAGE_INIT)
        elif draft and phase is Phase.CUDA_GRAPH and acc.reached is Phase.CUDA_GRAPH:
            acc.draft_stage = DRAFT_STAGE_CAPTURE
        if not failed and phase is Phase.SERVING:
            self._note_fill(event)
        if undo is not None:
            self.undo[event.source] = undo
            acc.last_progress = event
            if self.last_progress is None or event.order_key >= self.last_progress.order_key:
                self.last_progress = event
                self._note_told(event)
                self.progress_span = span
                self.hangs = [hang for hang in self.hangs if hang.order_key > event.order_key]
        if event.rule.pack == FRAMES_PACK:
            self.frame_placed.setdefault(phase, event)  # (a frame's rule is a failure's kind: where the rank was)
        if failed:
            return
        if event.rule.pack == FALLBACK_PACK:
            self.module_placed.setdefault(phase, event)
        else:
            self.rule_placed.add(phase)
        # the engine's own batches (a rule's `engine_work`) are printed by an offline engine in a script too: they
        # place the run in serving, but say it serves only beside a line of the server's own (its HTTP server
        # started or answered, its warmup, its ready line), which an offline engine never prints
        if event.rule.engine_work:
            self.engine_served = self.engine_served or phase is Phase.SERVING
        elif phase in _SERVER_PHASES:
            self.server_spoke = True
        self.served = self.served or (phase in (Phase.READY, Phase.SERVING) and not event.rule.engine_work)
        if (
            phase is Phase.SERVING
            and self.load is not None
            and event.order_key > self.load.order_key
            and not LOAD_CAPTURES & event.captures.keys()
        ):
            # the server moved after its stats line (a prefill, a request answered): that line owes no more
            self.load = None
        if phase in (Phase.READY, Phase.SERVING):
            # an engine put to sleep (vLLM's sleep mode) serves nothing until a serving line says it woke
            if "asleep" in event.captures:
                self.asleep = event if _newer(event, self.asleep) else self.asleep
            elif (
                self.asleep is not None
                and event.order_key > self.asleep.order_key
                and event.rule.pack == self.asleep.rule.pack
            ):
                # woken, or serving again, as the engine itself says (a trainer's own steps around it do not)
                self.asleep = None
        latest = self.latest_phase_event
        if latest is None or (event.order_key >= latest.order_key and not _cut_alike(event, latest)):
            self.latest_phase_event = event

    def _note_step(self, event: Event) -> None:
        """Keep `event` as the run's latest step where it reports one (`reports_step`)."""
        whole = as_whole(event)
        cut = whole is not event
        if "done" in event.captures:
            self.bar_rules.add(event.rule.id)
        latest = self.latest_step
        if cut and (
            whole.rule.id in self.bar_rules or (latest is not None and latest.message.startswith(event.message.strip()))
        ):
            # a bar's tick cut at the end, or a line the run's latest step starts with: the whole line before it stays
            # the run's latest step (a cut says fewer words, not other ones)
            return
        shape = DIGITS.sub("0", event.message)
        before = self.step_rules.get(whole.rule.id)
        self.step_rules[whole.rule.id] = shape
        # a list's next item: a line of a rule seen before that says other words (the next `Route: …`), not the same
        # words again in other numbers (a poll answered again, a waiting line repeated every few seconds); a cut line
        # that the rule's previous line starts with says no other words, only fewer
        repeated = before is not None and before != shape and not (cut and before.startswith(shape))
        if not reports_step(whole, repeated=repeated, same=before == shape):
            return
        if self.latest_step is None or event.order_key >= self.latest_step.order_key:
            self.latest_step = event
        self._note_told(event)

    def _note_told(self, event: Event) -> None:
        """Keep `event`, a step or progress, as the newest that dumps no configuration, or its line as one that does. A
        lifecycle line (the person's launch command) says no step: neither."""
        if event.role is Role.LIFECYCLE:
            return
        if any(_dumped(dump, event.message) for dump in self.dumps):
            self.dump_lines.add((event.source, event.line))
        elif self.latest_told is None or event.order_key >= self.latest_told.order_key:
            self.latest_told = event

    def note_unread_step(self, event: Event) -> None:
        """Keep `event`, a line no rule read that reports a step by its structure (logs/records.py), where it is the
        newest such line. It places nothing (no phase, no progress of a rank, no silence): it is only where an open
        run's last progress line may be (judging/logs.py `_last_alike`)."""
        if self.unread_step is None or event.order_key >= self.unread_step.order_key:
            self.unread_step = event

    def fragment_at_end(self, source: int, line: int) -> None:
        """The source ended inside line `line` (its reader knows its end; in a live file, a line still being written):
        where that line is a tqdm tick cut before the end of its count (`count_cut`) and the same rank's progress
        before it is a whole tick of the same rule and bar (its `desc`), the fragment still shows the run was active
        (the phase's end, the time), but the whole tick is what the log said: it stays the rank's and the run's last
        progress (the line a stall quotes), its count the bar's."""
        undo = self.undo.get(source)
        if undo is None or undo.event.line != line or not count_cut(undo.event):
            return
        before = undo.rank_progress
        if before is None or before.rule.id != undo.event.rule.id or count_cut(before):
            return
        if before.captures.get("desc") != undo.event.captures.get("desc"):
            return  # another bar of the rule (the next file's download): the fragment is that bar's first news
        if undo.acc.last_progress is undo.event:
            undo.acc.last_progress = before
        if self.last_progress is undo.event:
            self.last_progress, self.progress_span = before, undo.span
        if self.latest_phase_event is undo.event:
            self.latest_phase_event = undo.latest_phase_event
        undo.span.bar = undo.bar
        self.fragment = undo.event
        del self.undo[source]

    def _later_step_open(self, phase: Phase) -> bool:
        """Whether the run's newest phase line (any rank's) is of a step after `phase`."""
        latest = self.latest_phase_event
        return latest is not None and latest.phase is not None and latest.phase.order > phase.order

    def _follows(self, rank: str) -> bool:
        """Whether `rank` is followed: one of the first MAX_RANKS named; a later one is only counted."""
        if rank in self.followed:
            return True
        if len(self.followed) < MAX_RANKS:
            self.followed.add(rank)
            return True
        self.unfollowed.add(rank)
        return False

    def _owner(self, event: Event) -> str | None:
        """tqdm bars carry no rank tag: rank 0 prints them (docs/design.md §1)."""
        if event.rank is None and event.kind is EventKind.PROGRESS and event.phase not in MAIN_PROCESS_PHASES:
            return self.lowest_rank or event.rank
        return event.rank

    @staticmethod
    def _effective_phase(event: Event, acc: _RankAcc) -> tuple[Phase, bool]:
        """SGLang ≤0.5.10 runs the draft worker after the target's graphs: its second dist init,
        weight load and KV pool are `draft_init`; its capture (and the bars while it is the rank's
        latest news) is `cuda_graph` again, flagged draft. Later versions interleave and flag. A rule's
        `closes_from` ends the step open on the rank rather than its own phase."""
        phase = event.phase
        assert phase is not None
        reached = acc.reached
        opened = event.rule.closes_from
        if opened is not None and (reached is None or reached.order < phase.order):
            # the line closes the step the rank is in (a skipped capture is not claimed), at least `closes_from`; on
            # a rank no earlier line placed (a paste cut before it) that is all it proves
            return (reached if reached is not None and reached.order > opened.order else opened), event.rule.draft
        past_graphs = reached is not None and Phase.CUDA_GRAPH.order <= reached.order < Phase.HTTP_START.order
        if past_graphs and phase in DRAFT_REPEATED:
            if phase is not Phase.CUDA_GRAPH:
                return Phase.DRAFT_INIT, True
            if event.rule.draft or acc.draft_stage:
                return Phase.CUDA_GRAPH, True
        return phase, event.rule.draft

    @staticmethod
    def _is_progress(event: Event, span: _SpanAcc | None) -> bool:
        """A completed step (docs/design.md §4.3): a new phase, an end, a bar that advanced, a new
        begin; not a repeated line."""
        if span is None or event.kind in (EventKind.END, EventKind.READY):
            return True
        message = event.text
        if event.kind is EventKind.BEGIN:
            return span.ended or span.last_begin_text != message
        if event.kind is EventKind.PROGRESS:
            done = _int(event.captures.get("done"))
            if done is not None and span.bar is not None:
                _, last_done, last_total = span.bar
                return done > last_done or _int(event.captures.get("total")) != last_total
            return span.last_progress_text != _without_numbers_after(message)
        return False

    def _dated(self, event: Event, span: _SpanAcc) -> Event:
        """A bar tick without a stamp of its own takes the last stamp before it: a bar ticking for
        minutes after its phase's begin line would read as all at once. tqdm prints how long the bar
        has run: the tick is at the bar's start plus that, the start being no earlier than the
        phase's begin (the previous bar's last tick for a new bar) nor than any tick's time minus its
        elapsed. Every bound is a time the tick came after, so the date is never ahead of it."""
        clock = BAR_CLOCK.search(event.text)
        if event.time is None or event.stamped:
            return event
        if clock is None:  # a tick cut before its clock comes after the bar's previous tick all the same
            previous = span.bar[0] if span.bar is not None else None
            return replace(event, time=previous) if previous is not None and previous > event.time else event
        elapsed = timedelta(seconds=_interval(clock["elapsed"]))
        done, total = _int(event.captures.get("done")), _int(event.captures.get("total"))
        new_bar = span.bar is None or (done is not None and (done < span.bar[1] or total != span.bar[2]))
        start = span.bar_start
        if new_bar:  # after the previous bar's last tick, else after the begin line that opened the phase
            start = span.bar[0] if span.bar is not None else (span.start if span.last_begin_text is not None else None)
        candidates = [event.time - elapsed] + ([start] if start is not None else [])
        span.bar_start = max(candidates)
        dated = span.bar_start + elapsed
        if dated == event.time:
            return event
        self.dated.setdefault(event.rank, []).append(event.line)
        return replace(event, time=dated)

    @staticmethod
    def _extend(span: _SpanAcc, event: Event) -> None:
        span.end_line = max(span.end_line, event.line)
        # marks are left out: the fast path summarises their runs (logs/fast/plan.py is_steady)
        if event.time is not None and event.kind is not EventKind.MARK:
            if span.seen is not None and event.time > span.seen:
                wait = (event.time - span.seen).total_seconds()
                span.gaps += 1
                span.longest_gap_s = max(span.longest_gap_s or 0.0, wait)
            span.seen = max(span.seen or event.time, event.time)
        if event.time is not None:
            span.start = min(span.start or event.time, event.time)
            span.end = max(span.end or event.time, event.time)
        if event.kind is EventKind.END:
            span.ended = True
        elif event.kind is EventKind.BEGIN:
            span.last_begin_text = event.text
        elif event.kind is EventKind.PROGRESS:
            span.last_progress_text = _without_numbers_after(event.text)
            done = _int(event.captures.get("done"))
            if done is not None:
                total = _int(event.captures.get("total"))
                if span.bar is None or span.bar[2] != total or done < span.bar[1]:
                    span.first_bar = (event.time, done)  # a new bar (another batch size, the draft's)
                    span.tick, span.ticks, span.slowest_tick_s = event.time, 1, None
                elif done > span.bar[1]:
                    if span.tick is not None and event.time is not None:
                        wait = max(0.0, (event.time - span.tick).total_seconds())
                        span.slowest_tick_s = max(span.slowest_tick_s or 0.0, wait)
                    span.tick, span.ticks = event.time, span.ticks + 1
                clock = BAR_CLOCK.search(event.text)
                remaining = clock["remaining"] if clock is not None else "?"
                span.remaining_s = None if remaining == "?" else _interval(remaining)
                span.bar = (event.time, done, total)

    def _starting_http(self) -> bool:
        """The main process has begun its HTTP server or warmup and no ready line came."""
        main = self.ranks.get(None)
        return self.ready is None and main is not None and main.reached in (Phase.HTTP_START, Phase.WARMUP)

    def _note_counters(self, event: Event) -> None:
        captures = event.captures
        rank = event.rank
        counted = "comm" in captures or "seq" in captures or "last_completed" in captures
        if rank is not None and counted and not self._follows(rank):
            return
        if "comm" in captures and rank is not None:
            comm = captures["comm"]
            if event.kind is EventKind.BEGIN:
                self.comm_started.setdefault(comm, set()).add(rank)
            elif event.kind is EventKind.END:
                self.comm_started.setdefault(comm, set()).add(rank)
                self.comm_completed.setdefault(comm, set()).add(rank)
            nranks = _int(captures.get("nranks"))
            if nranks is not None:
                self.comm_nranks[comm] = nranks
        if rank is not None and ("last_completed" in captures or "seq" in captures):
            old = self.work.get(rank)
            self.work[rank] = WorkCounters(
                rank=rank,
                seq=_int(captures.get("seq")) if "seq" in captures else (old.seq if old else None),
                last_enqueued=_int(captures.get("last_enqueued"))
                if "last_enqueued" in captures
                else (old.last_enqueued if old else None),
                last_completed=_int(captures.get("last_completed"))
                if "last_completed" in captures
                else (old.last_completed if old else None),
            )

    def _note_fill(self, event: Event) -> None:
        """A step bar that reached its total: the same bar full again with another line between the two (not
        tqdm's close drawing the full bar a second time) was begun anew, so each fill ended a step."""
        total = event.captures.get("total")
        if event.kind is not EventKind.PROGRESS or not total or event.captures.get("done") != total:
            return
        key = _bar_key(event)
        before = self.bar_fills.get(key)
        if before is not None and before[0] == event.source and event.line > before[1] + 1:
            self.refilled.add(key)
        self.bar_fills[key] = (event.source, event.line)

    def _first_hang(self) -> Event | None:
        """The first report since the last progress that the program waits on something that does not come (a root
        mark: vLLM's `No available shared memory broadcast block`), else the first that shows nothing moves (a
        cascade mark: its stats' zero throughput with requests outstanding), as a failure's root beats a cascade."""
        since = [h for h in self.hangs if self.last_progress is None or h.order_key > self.last_progress.order_key]
        roots = [h for h in since if h.role is Role.ROOT]
        return min(roots or since, key=lambda event: event.order_key, default=None)

    def finish(self) -> Timeline:
        tagged = any(rank is not None and is_tagged(rank) for rank in self.ranks)
        # "rank N" from NCCL or torch lines names the same processes as TP tags: keep the tags
        named = [
            acc
            for rank, acc in self.ranks.items()
            if rank is not None and acc.reached is not None and (not tagged or is_tagged(rank))
        ]
        named.sort(key=lambda acc: rank_sort_key(acc.rank))
        main = self.ranks.get(None)
        spans: list[PhaseSpan] = []
        for acc in ([main] if main else []) + named:
            spans.extend(_close_spans(acc))
        failures = sorted(self.failures, key=lambda event: event.order_key)
        # torch.distributed lines appear inside every SGLang / vLLM log: they name the system only
        # of a job that shows nothing else (a torchrun training job)
        servers = Counter({name: n for name, n in self.systems.items() if name not in self.job_systems})
        votes = servers or self.systems or self.implied
        system = votes.most_common(1)[0][0] if votes else None
        return Timeline(
            spans=tuple(spans),
            ranks=tuple(_state(acc) for acc in named),
            main=_state(main) if main and main.reached is not None else None,
            failures=tuple(failures),
            first_failures=tuple(self.first_failures),
            ready=self.ready,
            last_progress=self.last_progress,
            step_bar=self.last_progress is not None and _bar_key(self.last_progress) in self.refilled,
            latest_phase_event=self.latest_phase_event,
            placed_by_module={p: e for p, e in self.module_placed.items() if p not in self.rule_placed},
            placed_by_frames={p: e for p, e in self.frame_placed.items() if p not in self.rule_placed},
            fragment=self.fragment,
            latest_step=self.latest_step,
            latest_told=self.latest_told,
            unread_step=self.unread_step,
            dump_lines=frozenset(self.dump_lines),
            visible_ranks=frozenset(self.visible),
            served=self.served or (self.engine_served and self.server_spoke),
            health=self.health,
            health_answers=tuple(self.health_answers.items()),
            health_first=self.health_first,
            health_last=self.health_last,
            interrupt=self.interrupt,
            hang=self._first_hang(),
            exits=dict(self.exits),
            group_exit=self.group_exit,
            returned=dict(self.returned),
            system=system,
            system_is_server=system is not None and system not in self.job_systems,
            version=self.version,
            comms=tuple(
                CommInit(
                    comm,
                    self.comm_nranks.get(comm),
                    frozenset(started),
                    frozenset(self.comm_completed.get(comm, set())),
                )
                for comm, started in self.comm_started.items()
            ),
            work=tuple(sorted(self.work.values(), key=lambda w: rank_sort_key(w.rank))),
            events=self.events,
            first_time=self.first_time,
            last_time=self.last_time,
            bar=self._bar_pace(),
            inputs=tuple(
                InputFacts(
                    source,
                    systems.most_common(1)[0][0] if (systems := self.source_systems.get(source)) else None,
                    *self.source_times.get(source, (None, None)),
                )
                for source in sorted(set(self.source_times) | set(self.source_systems))
            ),
            dated=tuple(
                DatedTicks(rank, len(lines), min(lines), max(lines))
                for rank, lines in sorted(self.dated.items(), key=lambda item: rank_sort_key(item[0]))
            ),
            unfollowed=len(self.unfollowed),
            floor=self.floor,
            noted_step=self.noted_step,
            load=self.load,
            asleep=self.asleep,
            offline=self.offline,
        )

    def _bar_pace(self) -> BarPace | None:
        """The bar the newest progress ticked, while it is short of its total."""
        event, span = self.last_progress, self.progress_span
        if event is None or span is None or span.bar is None or event.kind is not EventKind.PROGRESS:
            return None
        _, done, total = span.bar
        if total is None or done >= total or _int(event.captures.get("done")) != done:
            return None
        return BarPace(span.phase, span.rank, done, total, event, span.ticks, span.slowest_tick_s, span.remaining_s)


# a run of digits: a repeated line says the same words in other numbers (a poll's client port, a time)
DIGITS = re.compile(r"\d+")
# the kinds of line that say a step of the run was begun, made or done (docs/design.md §4.3)
STEP_KINDS = frozenset({EventKind.BEGIN, EventKind.PROGRESS, EventKind.END})


# A line is an argument dump where it opens with the arguments' name alone (`server_args=ServerArgs(`, `non-default
# args: {`, `args: Namespace(`), not with a sentence that says a step and then its config (vLLM's `Initializing a V1
# LLM engine (v0.9.2) with config: …`, the engine's start: a step the README counts)
DUMP_NAME_WORDS_MAX = 3


def _dumped(dump: PackRegex, message: str) -> bool:
    """Whether `message` is an argument dump of the `[[server_args]]` format `dump` (see DUMP_NAME_WORDS_MAX)."""
    found = dump.compiled.search(message)
    return found is not None and len(message[: found.end()].split()) <= DUMP_NAME_WORDS_MAX


def _cut_alike(event: Event, latest: Event) -> bool:
    """Whether `event` is a line cut at the paste's end inside a line of `latest`'s own rule: a cut says fewer words,
    not other ones, so the whole line before it stays the newest of its kind (`_last_alike` quotes it)."""
    return CUT_LEAD in event.captures and event.captures.get(PLACED_BY) == latest.rule.id


def as_whole(event: Event) -> Event:
    """`event` as its whole line would be read: a step's line cut at the paste's end (matcher.cut_phase, a diagnostic
    mark placed by no rule) under the rule it begins, its kind and role; any other event as it is. A cut line still
    says its step (realworld 663, 770, 1126, 1135, 1147 quote it as the run's last)."""
    placed = event.captures.get(PLACED_BY)
    kind, role = event.captures.get(CUT_KIND), event.captures.get(CUT_ROLE)
    if CUT_LEAD not in event.captures or placed is None or kind is None or role is None:
        return event
    return replace(event, rule=replace(event.rule, id=placed, kind=EventKind(kind), role=Role(role)))


def reports_step(event: Event, *, repeated: bool, same: bool = False) -> bool:
    """Whether `event` reports a step of the run (fixtures/realworld/README.md, `root_cause_line`): a step begun or
    done, a bar's tick, or an item of a list the run prints as it goes: a mark of a rule seen before, in other words
    (each vLLM `Route: …` line; `repeated`), outside serving. A failure is no step, nor a note a rule calls so: a
    diagnostic (advice, a warning), a hang report, and a line of a phase's machinery any process prints (an `ambient`
    rule: NCCL's plugin, transport and tuning notes), which says the machinery is in use, not that a step was made."""
    if event.kind in FAILURE_KINDS or event.role is Role.DIAGNOSTIC:
        return False
    if event.kind in STEP_KINDS:
        return True
    listed = event.kind is EventKind.MARK and event.role not in (Role.ROOT, Role.CASCADE)
    # (`same`: the rule's previous line said these very words, a waiting line repeated: no step again)
    # a serving mark (an access line, a batch's stats) is traffic, not a list: its runs are summarised by the fast
    # paths (logs/fast, watch's FollowRuns), which read a run's first and last lines only; a step must not depend on
    # which lines of such a run were read. A mark whose line is a logger's INFO record of words (logs/records.py: not
    # a dump, a setting, advice) says a step in the run's own words as a line no rule reads would (SGLang's router
    # `Initializing router on …`)
    return (
        listed
        and not event.rule.ambient
        and event.phase is not Phase.SERVING
        and (repeated or (not same and records.reports_step(event.text)))
    )


def _close_spans(acc: _RankAcc) -> list[PhaseSpan]:
    """A phase that began but printed no end line lasted until the rank's next phase began (old
    SGLang has no `Init torch distributed ends`); a phase seen only in marks lasted as they did."""
    ordered = sorted(acc.spans.values(), key=lambda s: (s.start or datetime.min, s.start_line))
    spans: list[PhaseSpan] = []
    for index, span in enumerate(ordered):
        end = span.end
        if not span.ended and span.last_begin_text is not None and index + 1 < len(ordered):
            following = ordered[index + 1].start
            if following is not None and (end is None or following > end):
                end = following
        spans.append(
            PhaseSpan(
                phase=span.phase,
                rank=span.rank,
                draft=span.draft,
                source=span.source,
                start_line=span.start_line,
                end_line=span.end_line,
                start=span.start,
                end=end,
                ended=span.ended,
                progress=_progress(span),
                gaps=span.gaps,
                longest_gap_s=span.longest_gap_s,
            )
        )
    return spans


def _progress(span: _SpanAcc) -> Progress | None:
    if span.bar is None:
        return None
    last_time, done, total = span.bar
    rate = None
    if span.first_bar is not None:
        first_time, first_done = span.first_bar
        if first_time is not None and last_time is not None and last_time > first_time:
            rate = round((done - first_done) / (last_time - first_time).total_seconds(), 3)
    return Progress(done, total, rate)


def _state(acc: _RankAcc) -> RankState:
    assert acc.reached is not None and acc.last_event is not None
    stage = acc.draft_stage if acc.reached is Phase.CUDA_GRAPH else 0
    reached = Phase.DRAFT_INIT if stage == DRAFT_STAGE_INIT else acc.reached
    span = acc.spans.get((reached, stage > 0)) or acc.spans.get((reached, stage == 0))
    position = (acc.reached.order, stage, int(span is not None and span.ended))
    current = Phase.COMPILE if acc.latest_phase is Phase.COMPILE else reached
    return RankState(acc.rank, reached, current, position, acc.last_progress, acc.last_event)


def _interval(text: str) -> float:
    """tqdm's `[H:]MM:SS` in seconds."""
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + int(part)
    return seconds


def _newer(event: Event, held: Event | None) -> bool:
    return held is None or event.order_key >= held.order_key


def requests_held(event: Event) -> int:
    """The requests a stats line counts as still held by the server (LOAD_CAPTURES): running or queued."""
    return sum(_int(event.captures.get(name)) or 0 for name in LOAD_CAPTURES)


def _int(text: str | None) -> int | None:
    return read_int(text)


def _without_numbers_after(text: str) -> str:
    """A bar's text without its timing fields, so `[00:12<00:30, 1.2it/s]` ticks are not progress."""
    return text.split("[", 1)[0] if "%|" in text or "it/s" in text else text


def _bar_key(event: Event) -> tuple[str | None, str, str, str]:
    """Which bar a progress line draws: its rank, rule, description and total."""
    return (event.rank, event.rule.id, event.captures.get("desc", ""), event.captures.get("total", ""))
