"""Midnight under time-of-day stamps: the lines a summary must not skip for the matcher's day to roll over (pure)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from logphase.logs.fast.templates import Template, atoms_regex

MORNING = b"(?:0[0-9]|1[01])"  # the hours a rollover lands on (before noon)
AFTERNOON = b"(?:1[2-9]|2[0-9])"  # the hours the latest time must have for one (noon on)


@dataclass
class _Search:
    """A search from `start` (the matcher's clock past noon or not, then): whether a line past noon
    was passed, how far it went, the candidate it found."""

    start: int
    afternoon: bool
    past_noon: bool
    end: int
    found: int | None = None


class Rollovers:
    """SGLang 0.3's `[23:17:01 TP7]` has no date: the matcher moves to the next day where a line's
    time is more than 12 hours before the latest it read (`Clock.read`), so a line
    it skips could have been that line. One can be only where the latest time is past noon and the
    line's before it: the first line stamped before noon after a line stamped past noon (or after the
    matcher's clock, if past noon). That line is a candidate the matcher reads, with the line of the
    latest time before it (`peak`); what the matcher's clock then shows decides the next search.

    Exact while the lines a summary skips do not go back in time by more than the lines the matcher
    reads around them show (the fast path's rule for every stamp)."""

    def __init__(self) -> None:
        self.seen: list[Template] = []  # the templates `learn` was given
        self.templates: list[Template] = []
        self.morning: tuple[re.Pattern[bytes], re.Pattern[bytes]] | None = None
        self.afternoon: tuple[re.Pattern[bytes], re.Pattern[bytes]] | None = None
        self.search: _Search | None = None

    def learn(self, templates: Sequence[Template]) -> None:
        """The templates known now (after a recompile)."""
        self.seen = list(templates)
        timed = [t for t in templates if t.stamp == "time" and t.hour >= 0]
        if not timed or timed == self.templates:
            return
        self.templates = timed
        heads = b"(?:" + b"|".join(sorted({atoms_regex(t.atoms[: t.hour]) for t in timed})) + b")"
        self.morning = (re.compile(heads + MORNING), re.compile(b"\n" + heads + MORNING))
        self.afternoon = (re.compile(heads + AFTERNOON), re.compile(b"\n" + heads + AFTERNOON))
        self.search = None

    def next(self, buf: bytes, start: int, limit: int, *, afternoon: bool) -> int | None:
        """The first candidate line in [start, limit) (`start` and `limit` start lines); `afternoon`:
        the matcher's clock is past noon. Searches go on where the last one stopped."""
        if not self.templates:
            return None
        search = self.search
        if search is not None and search.found is not None and search.found >= start and search.afternoon == afternoon:
            return search.found if search.found < limit else None
        if search is None or search.afternoon != afternoon or search.start > start or search.found is not None:
            # the matcher's clock went past noon or back (it read a candidate): a new search from here
            search = self.search = _Search(start, afternoon, afternoon, start)
        position = max(search.end, start)
        if position >= limit:
            return None
        if not search.past_noon:
            noon = self._first(self.afternoon, buf, position, limit)
            if noon is None:
                search.end = limit
                return None
            search.past_noon, position = True, noon
        found = self._first(self.morning, buf, position, limit)
        search.found, search.end = found, limit if found is None else found
        return found

    def _first(
        self, patterns: tuple[re.Pattern[bytes], re.Pattern[bytes]] | None, buf: bytes, start: int, end: int
    ) -> int | None:
        assert patterns is not None
        at_start, after_newline = patterns
        if at_start.match(buf, start, end):
            return start
        found = after_newline.search(buf, start, end)
        return None if found is None else found.start() + 1

    def peak(self, lines: Sequence[tuple[int, bytes, Template]]) -> int | None:
        """Of these lines (offset, bytes, template), the one with the latest time of day."""
        best: tuple[bytes, int] | None = None
        for start, raw, template in lines:
            if template.stamp == "time" and template.hour >= 0:
                at = template.own_at(raw, 0, template.hour)
                clock = raw[at : at + 8]
                if best is None or clock > best[0]:
                    best = (clock, start)
        return None if best is None else best[1]
