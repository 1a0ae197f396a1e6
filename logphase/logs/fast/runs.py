"""Steady runs: the events of one steady rule on one rank, booked as the matcher reads them (pure)."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field

from logphase.logs.matcher import Event
from logphase.logs.reader import Line
from logphase.logs.timeline import DRAFT_REPEATED
from logphase.packs import Rule
from logphase.phases import FAILURE_KINDS, MAIN_PROCESS_PHASES, EventKind, Phase


@dataclass
class Run:
    """The events of one steady rule on one rank since the matcher last saw one: `stage` 0 none
    yet, 1 one seen, 2 two seen with nothing in between that could change what the next does."""

    rule: Rule
    rank: str | None
    stage: int = 0
    member: int = -1  # offset of the last member the matcher saw, in this chunk
    carried: tuple[int, bytes] | None = None  # the last member of the previous chunk: (number, bytes)
    held: list[Line] = field(default_factory=list)  # FollowRuns: members due, the matcher has not read them


Runs = dict[tuple[str, str | None], Run]  # (steady rule id, rank) → its run


@dataclass
class RankPhases:
    """The phases the timeline was given since the last launch line, as far as they decide whether a
    steady mark can move a rank (timeline: `reached`, the highest phase, and past the CUDA graphs the
    draft's phases): per rank, the highest phase order of its events (COMPILE left out: the timeline
    does not raise a rank to it), and the highest of events without a rank (a bar goes to the
    lowest rank)."""

    highest: dict[str | None, int] = field(default_factory=dict)
    bars: int = -1  # the highest of the rankless bars, which the timeline gives the lowest rank (`_owner`)
    ready: bool = False  # the run's ready line was read: a rule's `after_ready` phase may hold (never below it)

    def phase_of(self, event: Event) -> Phase | None:
        """The phase the timeline may give the event: past the ready line, a rule's `after_ready` one (the timeline
        also checks the line's time against the ready line's; a line it keeps in the earlier phase is a mark of a
        phase the rank has left wherever this one settles it)."""
        if self.ready and event.rule.after_ready is not None:
            return event.rule.after_ready
        return event.phase

    def book(self, event: Event) -> None:
        if event.kind is EventKind.READY:
            self.ready = True
        phase = self.phase_of(event)
        if phase is None:
            return
        if phase is Phase.LAUNCH and event.kind is EventKind.BEGIN and event.rank is None:
            self.highest.clear()  # the server may start again here (scan/feed.py `_launched_again`): a new timeline
            self.bars = -1
            self.ready = False
        elif phase is not Phase.COMPILE:
            if event.kind is EventKind.PROGRESS and event.rank is None and phase not in MAIN_PROCESS_PHASES:
                self.bars = max(self.bars, phase.order)
            else:
                self.highest[event.rank] = max(self.highest.get(event.rank, -1), phase.order)

    def settled(self, event: Event) -> bool:
        """Whether the timeline's rank state (`reached`, the draft's stage) is the same after this
        event as before, whatever its rank reached exactly (at least the highest phase booked on it):
        a mark below the CUDA graphs on a rank at or past them (dropped: a phase the rank has left,
        or past the graphs the draft's, below them); an event of a phase the rank reached, on a
        rank not between the CUDA graphs and the HTTP server (there a DRAFT_REPEATED mark's phase
        follows the rank's), that is, at the server or, with the rankless lines (a bar is the lowest
        rank's), below the graphs. A bar may raise the lowest rank: rankless bars count for every rank
        where that would move it (`bars`), never toward what it reached."""
        phase = self.phase_of(event)
        if phase is None or phase is Phase.COMPILE:
            return False
        reached = self.highest.get(event.rank, -1)
        graphs, server = Phase.CUDA_GRAPH.order, Phase.HTTP_START.order
        if event.kind is EventKind.MARK and phase.order < graphs <= reached:
            return True
        if phase.order > reached:
            return False
        return reached >= server or max(reached, self.bars) < graphs


def book_runs(runs: Runs, steady: Container[str], event: Event, phases: RankPhases | None = None) -> Run | None:
    """Advance the runs as the matcher reads one event; the run a steady event belongs to. A run
    is stable (stage 2) after two events with nothing between that could change what the next
    does: a new phase on the rank, or a bar without a rank (it goes to the lowest rank). A run of
    the rank that starts again moves nothing where `phases` says the rank is settled in its phase:
    the others stay stable (two marks of one rank interleaved no longer restart each other)."""
    rule = event.rule
    settled = phases is not None and phases.settled(event)
    if phases is not None:
        phases.book(event)
    if rule.id in steady:
        key = (rule.id, event.rank)
        run = runs.get(key)
        if run is None or run.stage == 0:
            if run is None or not settled:
                _reset_rank(runs, event.rank, keep=key)
            run = runs[key] = Run(rule, event.rank, stage=1)
        else:
            run.stage = 2
        return run
    if event.phase is not None and event.kind not in FAILURE_KINDS:
        relaunch = event.phase is Phase.LAUNCH and event.kind is EventKind.BEGIN and event.rank is None
        if relaunch or (
            event.kind is EventKind.PROGRESS and event.rank is None and event.phase not in MAIN_PROCESS_PHASES
        ):
            # a launch line may start the server again (scan/feed.py `_launched_again`): every rank's
            # timeline starts over, and each run's first line is a phase's start again
            for run in runs.values():
                run.stage = 0
        else:
            _reset_rank(runs, event.rank, keep=None)
    return None


def _reset_rank(runs: Runs, rank: str | None, keep: tuple[str, str | None] | None) -> None:
    """An event that may move a rank's phase past the CUDA graphs changes where its next
    dist_init / weight_load / kv_cache / cuda_graph marks go (the draft's spans)."""
    for key, run in runs.items():
        if key != keep and run.rank == rank and run.rule.phase in DRAFT_REPEATED:
            run.stage = 0
