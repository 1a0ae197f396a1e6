"""The picture as terminal text: one row of phase letters per rank group, scaled to a given width."""

from __future__ import annotations

import math
from datetime import datetime

from logphase.durations import format_duration
from logphase.phases import Phase
from logphase.report.model import Report
from logphase.report.paint import paint, verdict_colour
from logphase.report.picture import NO_TIMESTAMPS, PHASE_LETTERS, Picture, picture

# The ground of each phase's bar in colour (the letters stay, so a bar is named in any terminal).
PHASE_GROUNDS = {
    Phase.LAUNCH: "on_grey",
    Phase.TOKENIZER: "on_grey",
    Phase.DIST_INIT: "on_cyan",
    Phase.WEIGHT_LOAD: "on_blue",
    Phase.KV_CACHE: "on_magenta",
    Phase.DRAFT_INIT: "on_bright_magenta",
    Phase.COMPILE: "on_yellow",
    Phase.CUDA_GRAPH: "on_green",
    Phase.HTTP_START: "on_bright_cyan",
    Phase.WARMUP: "on_bright_yellow",
    Phase.READY: "on_bright_green",
    Phase.SERVING: "on_bright_green",
}
_GROUND_OF_LETTER = {letter: PHASE_GROUNDS[phase] for phase, letter in PHASE_LETTERS.items()}
MIN_BAR_WIDTH = 20
BASELINE = "baseline"


def timeline_lines(report: Report, *, width: int, colour: bool = False) -> list[str]:
    """The picture in at most `width` columns; one line when the log has phases but no timestamps,
    none when it has no phases."""
    drawn = picture(report)
    if drawn is None:
        return [NO_TIMESTAMPS] if report.phases else []
    return _draw(drawn, width, colour)


def _draw(drawn: Picture, width: int, colour: bool) -> list[str]:
    labels = [lane.label for lane in drawn.lanes] + ([BASELINE] if drawn.ticks else [])
    label_width = max(len(label) for label in labels)
    marks = {lane.label: f"  < {lane.mark.value}" for lane in drawn.lanes if lane.mark is not None}
    mark_width = max((len(mark) for mark in marks.values()), default=0)
    cells = max(MIN_BAR_WIDTH, width - label_width - 2 - mark_width)
    step = drawn.seconds / cells
    indent = " " * (label_width + 2)

    def column(moment: datetime) -> int:
        return min(cells - 1, int((moment - drawn.start).total_seconds() / step))

    out = [f"Timeline, {format_duration(drawn.seconds)} (a column is {_step(step)}):"]
    first, last = _clock(drawn.start, drawn.end), _clock(drawn.end, drawn.start)
    out.append(indent + first + last.rjust(cells - len(first)))
    for lane in drawn.lanes:
        row = [" "] * cells
        for bar in sorted(lane.bars, key=lambda bar: bar.start - bar.end):  # the shortest last: each one shows
            begin = column(bar.start)
            end = max(begin, min(cells - 1, math.ceil((bar.end - drawn.start).total_seconds() / step) - 1))
            row[begin : end + 1] = bar.letter * (end - begin + 1)
        mark = marks.get(lane.label, "")
        painted = paint(mark, verdict_colour(lane.mark), colour) if lane.mark is not None else ""
        out.append((lane.label.ljust(label_width + 2) + _paint_row(row, colour) + painted).rstrip())
    if drawn.ticks:
        row = [" "] * cells
        for tick in drawn.ticks:
            if tick.phase is not None:
                row[column(tick.at)] = PHASE_LETTERS[tick.phase]
        out.append((BASELINE.ljust(label_width + 2) + _paint_row(row, colour)).rstrip())
    if drawn.cause is not None:
        at = column(drawn.cause.at)
        caret = paint("^", "red", colour)
        text = drawn.cause.label
        if at + 2 + len(text) <= cells + mark_width:
            out.append(f"{indent}{' ' * at}{caret} {text}")
        else:  # no room to its right: the words before the caret
            out.append(f"{indent}{' ' * max(0, at - len(text) - 1)}{text} {caret}")
    out += _legend(drawn, indent, width, colour)
    if drawn.ticks:
        out.append(f"{indent}baseline: where the earlier run's phases ended, from its first timestamp")
    return out


def _paint_row(row: list[str], colour: bool) -> str:
    """Runs of one letter painted at once (fewer escape codes)."""
    if not colour:
        return "".join(row)
    out, index = [], 0
    while index < len(row):
        letter, end = row[index], index
        while end < len(row) and row[end] == letter:
            end += 1
        run = letter * (end - index)
        ground = _GROUND_OF_LETTER.get(letter.upper())
        out.append(paint(run, ground, True) if ground is not None else run)
        index = end
    return "".join(out)


def _legend(drawn: Picture, indent: str, width: int, colour: bool) -> list[str]:
    """`L launch · D dist_init · …`, wrapped at the width."""
    lines: list[str] = []
    shown, painted = "", ""  # the line as it shows, and as it is written
    for letter, name in drawn.legend():
        item = f"{letter} {name}"
        if shown and len(indent) + len(shown) + 3 + len(item) > width:
            lines.append(indent + painted)
            shown, painted = "", ""
        separator = " · " if shown else ""
        shown += separator + item
        painted += separator + _paint_row([letter], colour) + f" {name}"
    return [*lines, indent + painted] if shown else lines


def _step(seconds: float) -> str:
    """A column's time: `0.05s`, `0.4s` below ten seconds, else as durations read (`12s`, `1m05s`)."""
    if seconds < 1:
        return f"{seconds:.2g}s"
    return f"{seconds:.1f}s" if seconds < 10 else format_duration(seconds)


def _clock(moment: datetime, other: datetime) -> str:
    """`09:12:06`; with the day when the axis spans more than one."""
    return f"{moment:%m-%d %H:%M:%S}" if moment.date() != other.date() else f"{moment:%H:%M:%S}"
