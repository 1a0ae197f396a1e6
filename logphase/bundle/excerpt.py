"""Cutting a huge log to what a bug report needs, keeping every kept line's original number (pure).

Kept: the head (the setup: server args, versions), the tail (how it ended), and a window around
each marked line (failures, the root cause, phase starts and ends, each rank's last progress).
Each kept line is written `NUMBER: text`; each cut is one line saying which lines were left out,
so a reader can quote `line 81234` of the original from the excerpt."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

HEAD_LINES = 1000
TAIL_LINES = 1000
AROUND_LINES = 30
# A log with an error on every line would otherwise be kept whole.
MAX_MARKS = 500


@dataclass(frozen=True)
class Excerpt:
    """Which lines of a log of `total` lines are kept: inclusive ranges, in order, disjoint."""

    total: int
    kept: tuple[tuple[int, int], ...]

    @property
    def kept_lines(self) -> int:
        return sum(end - start + 1 for start, end in self.kept)

    @property
    def cut(self) -> tuple[tuple[int, int], ...]:
        """The ranges left out, inclusive."""
        gaps: list[tuple[int, int]] = []
        previous = 0
        for start, end in self.kept:
            if start > previous + 1:
                gaps.append((previous + 1, start - 1))
            previous = end
        if previous < self.total:
            gaps.append((previous + 1, self.total))
        return tuple(gaps)

    def describe(self) -> str:
        """`kept 2,061 of 120,000 lines: 1–1000, 5970–6030, 119001–120000`."""
        ranges = ", ".join(f"{start}–{end}" if start != end else str(start) for start, end in self.kept)
        return f"kept {self.kept_lines:,} of {self.total:,} lines: {ranges}"


def choose(
    total: int,
    marks: Iterable[int],
    *,
    head: int = HEAD_LINES,
    tail: int = TAIL_LINES,
    around: int = AROUND_LINES,
    max_marks: int = MAX_MARKS,
) -> Excerpt:
    """The lines to keep of a log of `total` lines (numbered from 1) with lines of interest `marks`."""
    wanted = [(1, min(head, total))] if head and total else []
    for mark in sorted({m for m in marks if 1 <= m <= total})[:max_marks]:
        wanted.append((max(1, mark - around), min(total, mark + around)))
    if tail and total:
        wanted.append((max(1, total - tail + 1), total))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(wanted):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return Excerpt(total=total, kept=tuple(merged))


def render(lines: Iterable[tuple[int, str]], excerpt: Excerpt) -> Iterator[str]:
    """The kept lines as `NUMBER: text` (numbers right-aligned), each cut as one marker line.
    `lines` are the log's (number, text) in order, one per physical line; they are streamed."""
    width = len(str(excerpt.total))
    gaps = {start: end for start, end in excerpt.cut}
    ranges = iter(excerpt.kept)
    current = next(ranges, None)
    if 1 in gaps:
        yield _marker(1, gaps[1], width)
    for number, text in lines:
        while current is not None and number > current[1]:
            current = next(ranges, None)
        if current is None:
            break
        if number < current[0]:
            continue
        yield f"{number:>{width}}: {text}"
        if number == current[1] and number + 1 in gaps:
            yield _marker(number + 1, gaps[number + 1], width)


def _marker(start: int, end: int, width: int) -> str:
    return f"{'.' * width}  [lines {start}–{end} cut: {end - start + 1:,} lines]"
