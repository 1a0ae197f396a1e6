"""The lines behind a verdict: a run's lines as the scan reads them, with their rank, phase and events, chosen."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, time
from typing import NamedTuple

from logphase.logs.matcher import Event
from logphase.logs.reader import Line
from logphase.logs.timeline import rank_sort_key
from logphase.packs import PackSet
from logphase.phases import FAILURE_KINDS, MAIN_PROCESS_PHASES, EventKind, Phase
from logphase.ranks import MAIN

# A line is shown once no event can still come for it: the matcher holds a traceback's frame events until
# its group ends. Past this many lines a late event still moves its rank's phase, but its line is shown
# without it.
SETTLE_LINES = 1024
# Without --tail, at most this many chosen lines are kept (the newest); a note says how many were left out.
MAX_CHOSEN = 100_000


class ViewEvent(NamedTuple):
    """What a line counts as: a rule's event kind, its phase (None for a failure of no phase), role and id."""

    kind: EventKind
    phase: Phase | None
    role: str
    rule: str

    def describe(self) -> str:
        """`cuda_graph begin`, `error (root)`, `weight_load progress`: as a person reads it."""
        if self.kind in FAILURE_KINDS:
            return f"{self.kind.value} ({self.role})" + (f" in {self.phase.value}" if self.phase else "")
        return f"{self.phase.value} {self.kind.value}" if self.phase else self.kind.value


@dataclass(frozen=True)
class ViewRow:
    """One line of the run: where it is, whose it is, the phase its rank was in, what it counts as."""

    path: str
    source: int
    line: int
    rank: str | None
    phase: Phase | None
    time: datetime | None
    text: str
    events: tuple[ViewEvent, ...] = ()

    @property
    def key(self) -> tuple[int, int]:
        return (self.source, self.line)


@dataclass(frozen=True)
class Hit:
    """A chosen line and the lines around it (`-C N`), as the lines came."""

    row: ViewRow
    before: tuple[ViewRow, ...]
    after: tuple[ViewRow, ...]


@dataclass(frozen=True)
class Selection:
    """Which lines to show: any of `ranks` (`main` is the untagged process; `TP3` is also `DP0 TP3`),
    any of `phases`, between `since` and `until` (a time of day is on the date of the log's first
    stamp), the last `tail`, each with `context` lines before and after."""

    ranks: tuple[str, ...] = ()
    phases: tuple[Phase, ...] = ()
    since: datetime | time | None = None
    until: datetime | time | None = None
    tail: int | None = None
    context: int = 0


@dataclass(frozen=True)
class View:
    hits: tuple[Hit, ...]
    left_out: int  # chosen lines not kept (beyond MAX_CHOSEN, without --tail)
    read: int  # lines read
    context: int  # the lines asked for around each chosen one


@dataclass
class _Pending:
    line: Line
    time: datetime | None
    events: list[Event] = field(default_factory=list)


class LineView:
    """The scan's tap (`scan(tap=...)`): each line of each source as the matcher reads it, with the
    events it made (a traceback's frame events arrive when its group ends). A line's rank is its event's, else its
    prefix's, else (a line with no prefix: a traceback's, a wrapped message's) the line before it's; its
    phase is its event's, else the phase its rank was last in. `view()` gives the lines chosen."""

    def __init__(self, packs: PackSet, names: Sequence[str], selection: Selection) -> None:
        self.packs, self.names, self.selection = packs, names, selection
        self.pending: dict[int, _Pending] = {}  # the current source's lines not shown yet, by number
        self.source = -1
        self.previous_rank: str | None = None
        self.phase_of: dict[str | None, Phase] = {}
        self.lowest_rank: str | None = None
        self.last_time: datetime | None = None
        self.day: datetime | None = None  # the first stamp's date: a time of day in --since/--until is on it
        self.before: deque[ViewRow] = deque(maxlen=selection.context)
        self.open: list[tuple[ViewRow, list[ViewRow], list[ViewRow]]] = []  # hits still taking lines after
        self.hits: deque[Hit] = deque(maxlen=selection.tail if selection.tail is not None else MAX_CHOSEN)
        self.chosen = 0
        self.read = 0

    # -- the scan's side

    def line(self, source: int, line: Line, events: Sequence[Event], clock: datetime | None) -> None:
        """A line read from source `source` (its `\\r` pieces share its number: the last is kept),
        the events the scan made as it read it (some of earlier lines'), and the scan's clock after it."""
        if source != self.source:
            self._settle_all()
            self._close()
            self.source, self.previous_rank = source, None
            self.before.clear()
        held = self.pending.get(line.number)
        if held is None:
            self.read += 1
            self.pending[line.number] = _Pending(line, clock)
        else:
            held.line = line
        self._attach(events)
        while len(self.pending) > SETTLE_LINES:
            self._settle(next(iter(self.pending)))

    def end(self, source: int, events: Sequence[Event]) -> None:
        """Source `source` ended: the events the scan held back, then every line shown."""
        if source == self.source:
            self._attach(events)
        self._settle_all()

    def view(self) -> View:
        self._settle_all()
        self._close()
        left_out = max(0, self.chosen - MAX_CHOSEN) if self.selection.tail is None else 0
        return View(tuple(self.hits), left_out, self.read, self.selection.context)

    def _close(self) -> None:
        """The hits still taking lines after them take no more (their source ended)."""
        for row, before, after in self.open:
            self._keep(Hit(row, tuple(before), tuple(after)))
        self.open = []

    # -- lines settle in order

    def _attach(self, events: Sequence[Event]) -> None:
        for event in events:
            held = self.pending.get(event.line)
            if held is not None:
                held.events.append(event)
            else:
                self._track(event)  # its line was shown: the rank's phase still moves

    def _settle_all(self) -> None:
        while self.pending:
            self._settle(next(iter(self.pending)))

    def _settle(self, number: int) -> None:
        held = self.pending.pop(number)
        for event in held.events:
            self._track(event)
        events = held.events
        moment = held.time or self.last_time
        if moment is not None:
            self.last_time = moment
        rank = self._rank(held.line, events)
        phase = next((e.phase for e in events if e.phase is not None), None) or self.phase_of.get(rank)
        row = ViewRow(
            path=self.names[self.source],
            source=self.source,
            line=number,
            rank=rank,
            phase=phase,
            time=moment,
            text=held.line.text,
            # a bar's `\r` updates share a line: each made the same event, shown once
            events=tuple(dict.fromkeys(ViewEvent(e.kind, e.phase, e.role.value, e.rule.id) for e in events)),
        )
        self._show(row)

    def _track(self, event: Event) -> None:
        """The rank's phase, as the timeline moves it: a phase line that is no failure (a frame's event places
        a rank, it moves nothing)."""
        if event.time is not None and self.day is None:
            self.day = event.time
        if event.phase is None or event.kind in FAILURE_KINDS:
            return
        rank = self._owner(event)
        self.phase_of[rank] = event.phase
        if rank is not None and (self.lowest_rank is None or rank_sort_key(rank) < rank_sort_key(self.lowest_rank)):
            self.lowest_rank = rank

    def _owner(self, event: Event) -> str | None:
        """A tqdm bar carries no rank tag: the lowest rank prints it (as logs/timeline.py gives it)."""
        if event.rank is None and event.kind is EventKind.PROGRESS and event.phase not in MAIN_PROCESS_PHASES:
            return self.lowest_rank
        return event.rank

    def _rank(self, line: Line, events: Sequence[Event]) -> str | None:
        if events:
            rank = self._owner(events[-1])
        else:
            fields, _ = self.packs.split_prefix(line.text)
            if not fields.prefixes and line.rank is None:
                return self.previous_rank  # a traceback's frame, a message's further line: its writer's
            rank = (
                fields.rank
                if fields.rank is not None
                else (f"rank {line.rank.rsplit(' ', 1)[-1]}" if line.rank else None)
            )
        self.previous_rank = rank
        return rank

    # -- choosing

    def _show(self, row: ViewRow) -> None:
        still_open = []
        for hit, before, after in self.open:
            after.append(row)
            if len(after) < self.selection.context:
                still_open.append((hit, before, after))
            else:
                self._keep(Hit(hit, tuple(before), tuple(after)))
        self.open = still_open
        if self._chosen(row):
            self.chosen += 1
            if self.selection.context:
                self.open.append((row, list(self.before), []))
            else:
                self._keep(Hit(row, (), ()))
        self.before.append(row)

    def _keep(self, hit: Hit) -> None:
        self.hits.append(hit)

    def _chosen(self, row: ViewRow) -> bool:
        chosen = self.selection
        if chosen.ranks and not any(_same_rank(wanted, row.rank) for wanted in chosen.ranks):
            return False
        if chosen.phases and row.phase not in chosen.phases:
            return False
        if chosen.since is not None or chosen.until is not None:
            if row.time is None:
                return False
            if chosen.since is not None and row.time < self._moment(chosen.since):
                return False
            if chosen.until is not None and row.time > self._moment(chosen.until):
                return False
        return True

    def _moment(self, when: datetime | time) -> datetime:
        if isinstance(when, datetime):
            return when
        day = self.day or self.last_time or datetime.min
        return datetime.combine(day.date(), when)


def _same_rank(wanted: str, rank: str | None) -> bool:
    """`TP3` is `TP3`, `DP0 TP3` and `PP1 TP3`; `rank 3` is `rank 3`; `main` the untagged process."""
    if rank is None:
        return wanted.strip().lower() == MAIN
    words = wanted.split()
    if wanted.lower().startswith("rank "):
        return rank == f"rank {words[-1]}"
    return all(word in rank.split() for word in words)
