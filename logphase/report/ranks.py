"""Rank sets in the compact form people read: `TP[0-3,5]`, `DP0 TP[0-1]`, `rank[0-7]`."""

from __future__ import annotations

import re
from collections.abc import Iterable

_LAST_NUMBER = re.compile(r"^(?P<head>.*?)(?P<number>\d+)$")


def format_rank_set(ranks: Iterable[str | None]) -> str:
    """Group ranks that differ only in their last number and write each group as ranges."""
    groups: dict[str, list[int]] = {}
    loose: list[str] = []
    for rank in ranks:
        if rank is None:
            loose.append("main")
            continue
        found = _LAST_NUMBER.match(rank)
        if found is None:
            loose.append(rank)
            continue
        groups.setdefault(found.group("head").rstrip(), []).append(int(found.group("number")))
    parts = []
    for head, numbers in groups.items():
        numbers = sorted(set(numbers))
        if len(numbers) == 1:
            parts.append(
                f"{head}{'' if head.endswith(('TP', 'DP', 'PP', 'EP')) else ' '}{numbers[0]}".replace("  ", " ")
            )
            continue
        parts.append(f"{head}[{_ranges(numbers)}]".replace("rank [", "rank["))
    return ", ".join(sorted(set(loose), key=loose.index) + parts)


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
