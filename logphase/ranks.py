"""Rank names as people read them: natural order (`TP2` < `TP10`) and the one compact form of a
rank set (`TP[0-3,5]`, `DP0 TP[0-1], DP1 TP0`, `rank[0-7]`) that every report and headline uses."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# ASCII digits only (`\d` takes `٣`), and at most 18 of them read as a number (as logphase/bounded.py
# reads numbers; a unit of the same layer, so not imported): a longer run stays text
_LAST_NUMBER = re.compile(r"^(?P<head>.*?)(?P<number>[0-9]{1,18})$")
_DIGITS = re.compile(r"([0-9]+)")
MAIN = "main"  # the untagged main process (rank None)


def natural_key(label: str) -> tuple[object, ...]:
    """`TP2` < `TP10`; `DP0 TP3` < `DP1 TP0`; a run of digits in its numeric order, however long."""
    parts = _DIGITS.split(label)  # text at even places, digits at odd ones: the keys' types line up
    return tuple(part if index % 2 == 0 else _digits_key(part) for index, part in enumerate(parts))


def _digits_key(digits: str) -> tuple[int, str]:
    significant = digits.lstrip("0") or "0"
    return len(significant), significant


def format_rank_set(ranks: Iterable[str | None]) -> str:
    """Ranks that differ only in their last number, grouped and written as ranges: `TP[0-1,3]`,
    `rank[0-2]`; one rank as is (`rank 3`); groups in natural order, after the ranks without a
    number (`main` for None) in the order given."""
    groups: dict[str, set[int]] = {}
    loose: dict[str, None] = {}  # a dict: in order, each once, without a scan of the list per rank
    for rank in ranks:
        label = MAIN if rank is None else rank
        found = _LAST_NUMBER.match(label)
        if found is None or found.group("head")[-1:].isdigit():  # a number of over 18 digits
            loose.setdefault(label)
            continue
        groups.setdefault(found.group("head"), set()).add(int(found.group("number")))
    parts = []
    for head in sorted(groups, key=natural_key):
        numbers = sorted(groups[head])
        parts.append(f"{head}{numbers[0]}" if len(numbers) == 1 else f"{head.rstrip()}[{_ranges(numbers)}]")
    return ", ".join([*loose, *parts])


def list_ranks(labels: Sequence[str], limit: int = 4) -> str:
    """For headlines: `TP0, TP1, TP3` when few, else the range form."""
    ordered = sorted(set(labels), key=natural_key)
    return ", ".join(ordered) if len(ordered) <= limit else format_rank_set(ordered)


def _ranges(numbers: list[int]) -> str:
    spans: list[str] = []
    start = previous = numbers[0]
    for number in numbers[1:]:
        if number == previous + 1:
            previous = number
            continue
        spans.append(f"{start}-{previous}" if previous > start else f"{start}")
        start = previous = number
    spans.append(f"{start}-{previous}" if previous > start else f"{start}")
    return ",".join(spans)
