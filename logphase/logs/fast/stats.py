"""What a fast scan counted instead of reading: ScanStats, which the caller merges into its own state."""

from __future__ import annotations

from collections import Counter
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
