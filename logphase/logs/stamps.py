"""Which line stamps move a log's clock: one line of another clock decides nothing (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from logphase.durations import format_duration

# A stamp more than this ahead of the log's clock is not believed until a second line confirms it: NTP
# slews or steps a clock by fractions of a second, the longest silences real logs show before their next
# line are timeouts of ~10 min (fixtures: warmup-request-read-timeout 601 s, nccl-watchdog 634 s), while a
# skewed clock is off by a time zone (hours) or, a bad RTC, by years. One such line among consistent ones
# (`[2026-...]` in a 2025 log) is another clock's, not news: it does not move the log's time.
CLOCK_JUMP = timedelta(hours=1)
# The lines of a source whose own stamp was not believed, kept for the report's note.
MAX_IGNORED_STAMPS = 3

Stamp = tuple[int, datetime, datetime]  # a line's number, its stamp, the log's clock then


@dataclass
class StampBelief:
    """What the matcher makes of the stamps of one source, in file order. Its fields are immutable
    values: a fork of the matcher (the fast path's probe) copies it one level deep."""

    held: Stamp | None = None  # a stamp far ahead of the clock, not believed yet
    ignored: tuple[Stamp, ...] = ()  # the first MAX_IGNORED_STAMPS stamps set aside
    ignored_count: int = 0
    last_ignored: int = 0  # the line of the last stamp set aside
    # a held stamp decided: (its line, the stamp if believed, else None), for the caller to take
    # (SourceFeed dates the events it kept back meanwhile)
    settled: tuple[int, datetime | None] | None = field(default=None)

    def believe(self, number: int, stamp: datetime, clock: datetime | None) -> tuple[datetime | None, bool]:
        """The log's clock after line `number` stamped `stamp`, and whether its stamp is believed. A
        stamp more than CLOCK_JUMP ahead is held: believed once the next stamped line is on its clock
        too (a real silence, a clock stepped forward), set aside when that line is back on the log's
        clock (one line of another clock). Never backwards within one file: ranks' stamps interleave
        out of order by fractions of a second, and file order is what one writer's lines really are
        in; a stamp more than CLOCK_JUMP behind is another clock's too."""
        held = self.held
        if clock is None:
            return stamp, True
        if stamp - clock <= CLOCK_JUMP:
            if held is not None:
                self.set_held_aside()
            if clock - stamp > CLOCK_JUMP:
                self._ignore((number, stamp, clock))
            return max(clock, stamp), True
        if held is not None and abs(stamp - held[1]) <= CLOCK_JUMP:
            self.held, self.settled = None, (held[0], held[1])
            return max(stamp, held[1]), True
        if held is not None:
            self.set_held_aside()
        self.held = (number, stamp, clock)
        return clock, False

    def set_held_aside(self) -> None:
        """The held stamp is not believed (the source ended before a second line confirmed it)."""
        held = self.held
        assert held is not None
        self._ignore(held)
        self.held, self.settled = None, (held[0], None)

    def restart(self, line: int) -> None:
        """The log's clock starts again at `line` (a restart): its stamp is the new clock's."""
        held = self.held
        if held is not None:
            self.held, self.settled = None, (held[0], None)
        if self.last_ignored == line:
            self.ignored_count -= 1
            self.ignored = tuple(entry for entry in self.ignored if entry[0] != line)

    def _ignore(self, entry: Stamp) -> None:
        self.ignored_count += 1
        self.last_ignored = entry[0]
        if len(self.ignored) < MAX_IGNORED_STAMPS:
            self.ignored = (*self.ignored, entry)


def ignored_stamp_notes(source: str, belief: StampBelief) -> list[str]:
    """The lines whose own stamp was not believed, for the report's notes."""
    if not belief.ignored_count:
        return []
    shown = ", ".join(
        f"line {line} ({stamp:%Y-%m-%d %H:%M:%S}, {format_duration(abs((stamp - clock).total_seconds()))} "
        f"{'ahead' if stamp > clock else 'behind'})"
        for line, stamp, clock in belief.ignored
    )
    more = belief.ignored_count - len(belief.ignored)
    lines = "1 line is" if belief.ignored_count == 1 else f"{belief.ignored_count} lines are"
    return [
        f"{source}: {lines} stamped over {format_duration(CLOCK_JUMP.total_seconds())} away from the log's "
        f"clock, with no line of its own clock after it: another clock's stamp, not used as the log's time: {shown}"
        + (f" and {more} more" if more > 0 else "")
    ]
