"""Rank names as people read them: natural order (`TP2` < `TP10`) and the one compact form of a
rank set (`TP[0-3,5]`, `DP0 TP[0-1], DP1 TP0`, `rank[0-7]`) that every report and headline uses."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_LAST_NUMBER = re.compile(r"^(?P<head>.*?)(?P<number>\d+)$")
MAIN = "main"  # the untagged main process (rank None)


def natural_key(label: str) -> tuple[object, ...]:
    """`TP2` < `TP10`; `DP0 TP3` < `DP1 TP0`."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label))


def format_rank_set(ranks: Iterable[str | None]) -> str:
    """Ranks that differ only in their last number, grouped and written as ranges: `TP[0-1,3]`,
    `rank[0-2]`; one rank as is (`rank 3`); groups in natural order, after the ranks without a
    number (`main` for None) in the order given."""
    groups: dict[str, set[int]] = {}
    loose: list[str] = []
    for rank in ranks:
        label = MAIN if rank is None else rank
        found = _LAST_NUMBER.match(label)
        if found is None:
            if label not in loose:
                loose.append(label)
            continue
        groups.setdefault(found.group("head"), set()).add(int(found.group("number")))
    parts = []
    for head in sorted(groups, key=natural_key):
        numbers = sorted(groups[head])
        parts.append(f"{head}{numbers[0]}" if len(numbers) == 1 else f"{head.rstrip()}[{_ranges(numbers)}]")
    return ", ".join(loose + parts)


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
