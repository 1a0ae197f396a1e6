"""What a fast scan counted instead of reading: ScanStats, which the caller merges into its own state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from logphase.logs.reader import LogSource
from logphase.logs.timeline import TimelineBuilder


@dataclass
class ScanStats:
    """What the fast path did. `lines`, `bytes` and `truncated_lines` are the source's counters
    (as the reader keeps them); `skipped_events` and `skipped_systems` are the events of steady
    runs the matcher never read, for the timeline's event count and system vote. The rest is for
    benchmarks and tests."""

    lines: int = 0
    bytes: int = 0
    truncated_lines: int = 0
    emitted: int = 0
    probed: int = 0
    skipped_events: int = 0
    skipped_systems: Counter[str] = field(default_factory=Counter)
    recompiles: int = 0
    plain_lines: int = 0

    def skip(self, system: str | None, events: int) -> None:
        """Count `events` events of a run the matcher does not read."""
        self.skipped_events += events
        if system:
            self.skipped_systems[system] += events

    def count_input(self, source: LogSource) -> None:
        """The source's counters, as reading every line leaves them."""
        source.lines = self.lines
        source.bytes += self.bytes
        source.truncated_lines += self.truncated_lines

    def count_events(self, builder: TimelineBuilder) -> None:
        """The skipped events into the timeline: counted, not read."""
        builder.events += self.skipped_events
        builder.systems.update(self.skipped_systems)


def unread_votes(
    buf: bytes, start: int, end: int, lines: int, rules: Sequence[tuple[str, Sequence[bytes]]]
) -> dict[str, int]:
    """The events of each system among `lines` unread lines, for the system vote: each rule (its
    system, its steady factors) takes the share of buf[start:end]'s lines that hold its most frequent
    factor (a busy server's mix holds across a chunk, so a sample of its lines tells it: a rare rule
    of another system takes its few lines, not a share by its number of runs). Never more events than
    lines: a line with two rules' factors is one line."""
    sampled = max(1, buf.count(b"\n", start, end))
    held: Counter[str] = Counter()
    for system, factors in rules:
        held[system] += max((buf.count(factor, start, end) for factor in factors), default=0)
    sampled = max(sampled, held.total())
    return {system: lines * share // sampled for system, share in held.items() if lines > 0 and share}
