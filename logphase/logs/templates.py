"""Lines no rule knows, grouped by template (numbers, hex, paths, ids masked) and counted (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from logphase.logs.reader import Line
from logphase.packs import PackSet

# What varies between lines of one template: masked so that they count as one. Each branch that
# opens with a repeat opens at a word boundary, or a search would start it again at every character
# of a long word (quadratic: 16 s on a 60 KB line); tests/test_regex_safety.py checks it.
_VARIABLE = re.compile(
    r"\b\w+://\S+"  # URLs
    r"|0x[0-9a-fA-F]+"  # addresses, ids
    r"|\b[0-9a-fA-F]{8,}\b"  # hashes, request ids
    r"|(?:/[\w.@+-]+)+/?"  # paths
    r"|\b\d+(?:[.:,]\d+)*(?:[eE][+-]?\d+)?[a-zA-Z%]*"  # numbers (with a unit), times, versions
)
# Distinct templates kept: past it, only the ones already seen are counted (memory stays bounded).
MAX_TEMPLATES = 5_000
SHOWN = 10


def template_of(message: str) -> str:
    return " ".join(_VARIABLE.sub("<*>", message).split())[:200]


@dataclass(frozen=True)
class Template:
    text: str
    count: int
    example_line: int
    example: str


@dataclass
class TemplateMiner:
    """Feed the lines no rule matched; `top()` gives the most frequent templates."""

    packs: PackSet
    _counts: dict[str, list[int | str]] = field(default_factory=dict)

    def feed(self, lines: Iterable[Line]) -> None:
        for line in lines:
            _, message = self.packs.split_prefix(line.text)
            if not message.strip():
                continue
            key = template_of(message)
            seen = self._counts.get(key)
            if seen is not None:
                seen[0] = int(seen[0]) + 1
            elif len(self._counts) < MAX_TEMPLATES:
                self._counts[key] = [1, line.number, line.text]

    def top(self, shown: int = SHOWN) -> tuple[Template, ...]:
        ranked = sorted(self._counts.items(), key=lambda item: (-int(item[1][0]), int(item[1][1])))
        return tuple(
            Template(text, int(count), int(number), str(example)) for text, (count, number, example) in ranked[:shown]
        )
