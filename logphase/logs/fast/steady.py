"""SteadyRuns: where a chunk's steady runs have the lines the matcher must see: a run's next member while it
is not stable, its last member before each line read (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from logphase.logs.fast.candidates import CandidateScan, Kind, shadowed
from logphase.logs.fast.chunk import ChunkLines
from logphase.logs.fast.plan import Plan, message_matches, message_start
from logphase.logs.fast.runs import Run, Runs
from logphase.logs.matcher import Event


class SteadyRuns(ChunkLines):
    """What FastLines asks of its steady runs (serving batches, access lines, NCCL chatter): the first
    line from `pos` on of a run not yet stable (its first two events are read), and each stable run's
    last member the matcher has not seen before a line it reads (the only one of the run's events that
    counts there: the others repeat it). A member is a line of the run's kind (its template, holding
    its factor, one its rule could match: `_of_kind`) whose probe is an event of its rule and rank."""

    plan: Plan
    scan: CandidateScan
    runs: Runs
    kind_next: dict[int, tuple[int, int | None, int]]  # by kind: (searched from, the member found, searched to)
    _probe_at: Callable[[int], tuple[Event, ...]]  # the events of the line at an offset (FastLines)

    def _next_unstable(self, limit: int) -> int | None:
        """The first line before `limit` that starts or restarts a steady run: its run has no
        two events the matcher saw since the last change."""
        best: int | None = None
        need = [
            index
            for index, kind in enumerate(self.scan.kinds)
            if self.runs.get((kind.rule.id, kind.template.rank), Run(kind.rule, None)).stage < 2
        ]
        if not need:
            return None
        for index in need:
            found = self._next_member(index, limit if best is None else min(best, limit))
            if found is not None and (best is None or found < best):
                best = found
        return best

    def _next_member(self, index: int, limit: int) -> int | None:
        """The first line from `pos` on, before `limit`, that is an event of this kind's run."""
        kind = self.scan.kinds[index]
        cached = self.kind_next.get(index)
        if cached is not None and cached[0] <= self.pos and (cached[1] is None or cached[1] >= self.pos):
            found: int | None = cached[1]
            if cached[1] is None and cached[2] < limit:
                found = self._walk_members(index, kind, cached[2], limit)
        else:
            found = self._walk_members(index, kind, self.pos, limit)
        return found if found is not None and found < limit else None

    def _walk_members(self, index: int, kind: Kind, start: int, limit: int) -> int | None:
        origin = self.pos
        while start < limit:
            found = self.presence_of(index, start, limit)
            if found is None:
                break
            if self._is_member(kind, found):
                self.kind_next[index] = (origin, found, found)
                return found
            start = self._line_end(found) + 1
        self.kind_next[index] = (origin, None, max(start, limit))
        return None

    def presence_of(self, index: int, start: int, limit: int) -> int | None:
        """The first line in [start, limit) of this kind's template that holds its factor."""
        kind = self.scan.kinds[index]
        offset = self.buf.find(kind.factor, start, limit)
        while offset >= 0:
            line = self._line_start(offset)
            if line >= start and self._of_kind(kind, line):
                return line
            offset = self.buf.find(kind.factor, self._line_end(offset) + 1, limit)
        return None

    def _of_kind(self, kind: Kind, line: int) -> bool:
        """Whether the line at `line` (holding the kind's factor) is on its template and could be its rule's:
        it holds the strings its regex needs and, where that regex is anchored at the message's start, the
        message after the template matches it (the check `lines_to_read` makes: `plan.message_matches`)."""
        if not kind.pattern.match(self.buf, line):
            return False
        text = self.buf[kind.template.envelope_end(self.buf, line) : self._line_end(line)]
        if not self.plan.could_match(kind.rule, text):
            return False
        anchored = self.plan.anchored.get(kind.rule.id)
        if not message_matches(anchored, message_start(kind.template, text, None), text):
            return False
        return not shadowed(self.scan.shadows, kind.template, kind.rule.id, text)

    def _is_member(self, kind: Kind, offset: int) -> bool:
        events = self._probe_at(offset)
        return any(e.rule.id == kind.rule.id and e.rank == kind.template.rank for e in events)

    def _unseen_lasts(self, limit: int) -> Iterator[tuple[Run, int | None]]:
        """Each stable run, with its last member before `limit` the matcher has not seen."""
        for run in self.runs.values():
            if run.stage == 2:
                yield run, self._last_member(run, max(self.pos, run.member + 1), limit)

    def _last_member(self, run: Run, low: int, high: int) -> int | None:
        """The last line in [low, high) that is an event of this run."""
        best: int | None = None
        for kind in self.scan.kinds:
            if kind.rule.id != run.rule.id or kind.template.rank != run.rank:
                continue
            offset = self.buf.rfind(kind.factor, low, high)
            while offset >= 0 and (best is None or offset > best):
                line = self._line_start(offset)
                if line < low:
                    break
                if self._of_kind(kind, line) and self._is_member(kind, line):
                    best = line if best is None or line > best else best
                    break
                offset = self.buf.rfind(kind.factor, low, max(low, line))
        return best
