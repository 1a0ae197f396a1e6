"""OtherHours: where the next line of a known template stamped in another hour than the log's clock is."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

from logphase.logs.clock import Clock
from logphase.logs.fast.templates import Template
from logphase.logs.matcher import SourceMatcher

# The first bytes of a chunk a template's start is looked for in (a prefix is far shorter).
HEAD_BYTES = 1024


class OtherHours:
    """The matcher holds a stamp far from its clock until the next stamped line confirms it
    (StampBelief.believe); a line stamped in the clock's own hour is never that far from it. So
    the fast path shows the matcher every line stamped in another hour, and the lines it leaves
    unread change the clock as the ones it reads do. One search per chunk and hour: a log's lines
    stay in one hour for thousands of lines."""

    def __init__(self) -> None:
        self.found: tuple[bytes, int, int | None, int] | None = None  # pattern, from, found, searched to
        self.pattern: tuple[tuple[int, datetime | None, bool], bytes | None] | None = None  # the last one made

    def reset(self) -> None:
        """A new chunk: what was found was an offset in the last one."""
        self.found = None

    def next(
        self, buf: bytes, pos: int, end: int, limit: int, templates: Sequence[Template], matcher: SourceMatcher | None
    ) -> int | None:
        """The start of the first line in [pos, limit) of a template in `templates` stamped in another
        hour than the matcher's clock (any stamped one while it has none)."""
        clock = matcher.clock if matcher is not None else None
        time = clock.time if clock is not None else None
        hour = time.replace(minute=0, second=0, microsecond=0) if time is not None else None
        # templates are only ever added: their number and the clock's hour say which pattern it is
        key = (len(templates), hour, clock is not None and clock.year in (None, hour and hour.year))
        if self.pattern is None or self.pattern[0] != key:
            self.pattern = (key, _pattern(templates, clock))
        pattern = self.pattern[1]
        if pattern is None:
            return None
        cached = self.found
        if cached is not None and cached[0] == pattern and cached[1] <= pos:
            _, _, found, searched_to = cached
            if found is not None and found >= pos:
                return found if found < limit else None
            if found is None and searched_to >= limit:
                return None
        compiled = _compiled(pattern)
        found = None
        if pos == 0 and compiled.match(b"\n" + buf[:HEAD_BYTES]):
            found = 0
        else:
            hit = compiled.search(buf, max(0, pos - 1), end)  # from the newline before `pos`
            found = hit.start() + 1 if hit is not None else None
        self.found = (pattern, pos, found, end)
        return found if found is not None and found < limit else None


def _pattern(templates: Sequence[Template], clock: Clock | None) -> bytes | None:
    alternatives: set[bytes] = set()
    for template in templates:
        pattern = template.regex_off_hour(clock.hour(template.stamp, template.prefixes) if clock is not None else None)
        if pattern is not None:
            alternatives.add(pattern)
    return b"\n(?:" + b"|".join(sorted(alternatives)) + b")" if alternatives else None


@lru_cache(maxsize=16)
def _compiled(pattern: bytes) -> re.Pattern[bytes]:
    return re.compile(pattern)
