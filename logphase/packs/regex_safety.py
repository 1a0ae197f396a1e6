"""Catastrophic backtracking found before a regex runs: a static check of its parse tree for repeats
that can split one text two ways, and a timed probe on the line that check builds from the regex.

A backtracking engine (Python's `re`, the `regex` module) tries every way a failing line could
match. Where two ways consume the same text — a repeat inside a repeat (`(\\w+\\s?)+`), two repeats
side by side over overlapping characters (`\\d+[^+\\s]*`), or an unanchored search whose opening
repeat starts again at every character of a run (`\\w+://`) — a line of one character repeated,
then one that fails, costs quadratic time or worse: seconds to hours on a 64 KB line. The check
counts the ways a part of the regex matches a short run of one character (with its own small
matcher over the parse tree), so it needs no timing; the probe then runs the real regex on a line
of the reader's maximum length built from that part, under a timeout."""

from __future__ import annotations

import re as stdlib_re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_parser: Any = stdlib_re._parser  # type: ignore[attr-defined]
_c: Any = stdlib_re._constants  # type: ignore[attr-defined]

# A repeat of at most this many iterations does bounded work per start position: never a hazard.
UNBOUNDED = 32
# The run length the static check counts ways over (ways ≥ 2 at this length means ambiguity).
PUMPS = 6
# The longest regex a pack may hold: parsing, compiling and checking it stay well under a second
# (the longest shipped one is about 2,000 characters).
MAX_REGEX_CHARS = 8192
# The deepest nesting of groups a pack regex may have: every reader of its parse (the stdlib's,
# the `regex` module's, this check, the fast path's) recurses once or more per level.
MAX_REGEX_NESTING = 64
# The probe's line: the reader's bound on a line (logs/reader.py MAX_LINE_BYTES, not imported:
# packs sit below logs), and how long a regex may take on it.
PROBE_CHARS = 1 << 16
PROBE_SECONDS = 0.25
# The characters the check tries: ASCII and a few of other classes (a letter, a digit, a space
# and an ideograph outside ASCII); each regex is checked with one of every set that its atoms
# cannot tell apart.
ALPHABET = "".join(chr(code) for code in range(1, 128)) + "é٣\u2003中"

REWRITES = {
    "nested": "a repeat inside a repeat can split the same text many ways (like (a+)+ or (\\w+\\s?)*): "
    "repeat the inner part once, make the parts of one round unable to overlap, or make the repeat "
    "possessive (…)*+ / atomic (?>…)",
    "adjacent": "two repeats in a row both take the same characters (like \\d+[^+\\s]* or .*\\d+): make the "
    "second exclude what the first takes ([^+\\s\\d]), or make the first possessive (\\d++)",
    "leading": "the regex is searched, and its opening repeat starts again at every character of a long "
    "run (like \\w+://): anchor it with \\b or a lookbehind ((?<!\\w)\\w+://), or open with a literal",
}


@dataclass(frozen=True)
class Hazard:
    """One part of a regex that can match a run of `pump` in several ways."""

    kind: str  # "nested", "adjacent", "leading"
    pump: str  # the text repeated in the adversarial line
    prefix: str  # what reaches the part from the start of the regex
    fail: str  # a character that makes the match fail after the run

    @property
    def line(self) -> str:
        """The adversarial line: at most PROBE_CHARS long."""
        count = max(1, (PROBE_CHARS - len(self.prefix) - 1) // len(self.pump))
        return self.prefix + self.pump * count + self.fail

    def describe(self) -> str:
        return f"{self.kind} repeats over {self.pump!r}: {REWRITES[self.kind]}"


def hazards(pattern_text: str, ignore_case: bool = False, searched: bool = True) -> list[Hazard]:
    """The parts of a regex that can backtrack without bound, at most one per kind. `searched`: the
    regex is tried at every position (`search`), not only at the start (`match`). A regex of syntax
    only the `regex` module knows is not read (no hazards: its timeout still bounds it)."""
    try:
        parsed = _parser.parse(pattern_text, stdlib_re.IGNORECASE if ignore_case else 0)
    except Exception:
        return []
    checker = _Checker(_flatten(parsed), parsed.state.flags)
    return checker.run(searched)


def nesting(pattern_text: str) -> int:
    """How deep a regex's groups nest, read from its text (escapes and character classes skipped)."""
    depth = deepest = 0
    escaped = in_class = False
    for index, char in enumerate(pattern_text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]" or pattern_text[index - 1] == "["
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth = max(0, depth - 1)
    return deepest


def probe(hazard: Hazard, search: Callable[[str], object]) -> float:
    """Seconds `search` took on the hazard's line (the caller bounds it: a timeout of its own)."""
    started = time.perf_counter()
    search(hazard.line)
    return time.perf_counter() - started


_IGNORECASE, _DOTALL, _ASCII = int(stdlib_re.IGNORECASE), int(stdlib_re.DOTALL), int(stdlib_re.ASCII)
Items = Sequence[tuple[Any, Any]]
# What a search tries before each start: a lazy `.*?` over any character (one object: the
# check's memo is keyed by the identity of the items)
_ANYTHING = (_c.MIN_REPEAT, (0, _c.MAXREPEAT, [(_c.IN, [(_c.NEGATE, None)])]))


def _large(maximum: int) -> bool:
    return maximum is _c.MAXREPEAT or maximum >= UNBOUNDED


class _Checker:
    """The static check of one parsed regex."""

    def __init__(self, items: list[tuple[Any, Any]], flags: int) -> None:
        self.items = items
        self.flags = int(flags)
        atoms: list[tuple[Any, Any]] = []
        _collect_atoms(items, atoms)
        # one character per set of characters the regex's atoms cannot tell apart
        members = {repr(atom): frozenset(c for c in ALPHABET if self._atom(atom, c)) for atom in atoms}
        by_signature: dict[tuple[bool, ...], str] = {}
        for char in ALPHABET:
            by_signature.setdefault(tuple(char in chars for chars in members.values()), char)
        self.chars = list(by_signature.values())
        self.fail = by_signature.get(tuple(False for _ in members), "\n")
        self.memo: dict[tuple[int, str, int, int], Counter[int]] = {}

    def run(self, searched: bool) -> list[Hazard]:
        found: dict[str, Hazard] = {}
        self._walk(self.items, "", found, top=True)
        anchored = bool(self.items) and self.items[0][0] is _c.AT and self.items[0][1] in _STARTS
        if searched and not anchored and "leading" not in found:
            self._leading(self.items, found)
        return list(found.values())

    # -- the walk: every sequence of the tree, with the text that reaches it

    def _walk(self, items: Items, prefix: str, found: dict[str, Hazard], top: bool) -> None:
        before = prefix
        for index, (op, av) in enumerate(items):
            if index:
                before += self._witness_of(*items[index - 1])
            tail_can_fail = not top or _may_fail(items[index + 1 :])
            if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and _large(av[1]) and "nested" not in found and tail_can_fail:
                self._nested(items[index], before, found)
            if _varies(op, av) and "adjacent" not in found:
                self._adjacent(items, index, before, found, top)
            for child in _children(op, av):
                self._walk(child, before, found, top=False)

    def _nested(self, item: tuple[Any, Any], prefix: str, found: dict[str, Hazard]) -> None:
        for pump in self._pumps([item]):
            if self._ways([item], pump * PUMPS)[len(pump) * PUMPS] >= 2:
                found["nested"] = Hazard("nested", pump, prefix, self.fail)
                return

    def _adjacent(self, items: Items, start: int, prefix: str, found: dict[str, Hazard], top: bool) -> None:
        for end in range(start + 1, len(items)):
            if not _varies(*items[end]):
                continue
            if top and not _may_fail(items[end + 1 :]):
                return  # nothing after it can fail: the first way that reaches the end is taken
            part = items[start : end + 1]
            middle = self._witness(items[start + 1 : end])
            for pump in self._pumps(part, middle):
                if self._ways(part, pump * PUMPS)[len(pump) * PUMPS] >= 2:
                    found["adjacent"] = Hazard("adjacent", pump, prefix, self.fail)
                    return

    def _leading(self, items: Items, found: dict[str, Hazard]) -> None:
        """A searched regex is tried from every position: like a lazy `.*?` in front of it."""
        if items and items[0][0] is _c.BRANCH:  # each alternative opens the regex
            for branch in items[0][1][1]:
                self._leading([*branch, *items[1:]], found)
            return
        for end, (op, av) in enumerate(items):
            if _varies(op, av) or (op is _c.POSSESSIVE_REPEAT and _large(av[1])):
                if not _may_fail(items[end + 1 :]):
                    return
                part = [_ANYTHING, *items[: end + 1]]
                for pump in self._pumps(items[: end + 1]):
                    if self._ways(part, pump * PUMPS)[len(pump) * PUMPS] >= 2:
                        found["leading"] = Hazard("leading", pump, "", self.fail)
                        return
            elif op is _c.AT and av in _STARTS:
                return
            elif not self._nullable([(op, av)]):
                return  # a required item before any repeat: the search starts only where it matches

    def _pumps(self, items: Items, middle: str = "") -> list[str]:
        pumps = [char for char in self.chars if self._ways(items, char * PUMPS)[PUMPS]]
        if middle and self._ways(items, middle * PUMPS)[len(middle) * PUMPS]:
            pumps.append(middle)
        return pumps

    # -- a small matcher over the parse tree that counts the ways to each end

    def _ways(self, items: Items, text: str) -> Counter[int]:
        return self._sequence(items, text, 0, self.flags)

    def _sequence(self, items: Items, text: str, start: int, flags: int) -> Counter[int]:
        at: Counter[int] = Counter({start: 1})
        for item in items:
            following: Counter[int] = Counter()
            for position, ways in at.items():
                for end, more in self._node(item, text, position, flags).items():
                    following[end] = min(following[end] + ways * more, 1 << 20)
            at = following
            if not at:
                break
        return at

    def _node(self, item: tuple[Any, Any], text: str, start: int, flags: int) -> Counter[int]:
        key = (id(item), text, start, flags)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = self._node_ways(item, text, start, flags)
        return found

    def _node_ways(self, item: tuple[Any, Any], text: str, start: int, flags: int) -> Counter[int]:
        op, av = item
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            char = text[start : start + 1]
            return Counter({start + 1: 1}) if char and self._atom(item, char, flags) else Counter()
        if op is _c.AT:
            return Counter({start: 1}) if _at(av, text, start) else Counter()
        if op is _c.SUBPATTERN:
            _, add, remove, body = av
            return self._sequence(body, text, start, (flags | add) & ~remove)
        if op is _c.BRANCH:
            total: Counter[int] = Counter()
            for branch in av[1]:
                total.update(self._sequence(branch, text, start, flags))
            return total
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            return self._repeat(av, text, start, flags)
        if op is _c.POSSESSIVE_REPEAT:
            return _first(self._repeat(av, text, start, flags))
        if op is _c.ATOMIC_GROUP:
            return _first(self._sequence(av, text, start, flags))
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            direction, body, width = av
            if direction > 0:
                holds = bool(self._sequence(body, text, start, flags))
            else:
                holds = start >= width and start in self._sequence(body, text, start - width, flags)
            return Counter({start: 1}) if holds == (op is _c.ASSERT) else Counter()
        if op is _c.GROUPREF_EXISTS:
            total = Counter(self._sequence(av[1], text, start, flags))
            total.update(self._sequence(av[2] or [], text, start, flags))
            return total
        return Counter({start: 1})  # a back-reference: read as empty (the check over-approximates)

    def _repeat(self, av: tuple[int, int, Items], text: str, start: int, flags: int) -> Counter[int]:
        low, high, body = av
        result: Counter[int] = Counter()
        at: Counter[int] = Counter({start: 1})
        rounds = 0
        while at:
            if rounds >= low:
                result.update(at)
            if rounds == high or rounds > len(text) + 1:
                break
            following: Counter[int] = Counter()
            for position, ways in at.items():
                for end, more in self._sequence(body, text, position, flags).items():
                    if end != position or rounds < low:  # an empty round ends the repeat
                        following[end] = min(following[end] + ways * more, 1 << 20)
            at = following
            rounds += 1
        return result

    def _atom(self, item: tuple[Any, Any], char: str, flags: int | None = None) -> bool:
        flags = self.flags if flags is None else flags
        if flags & _IGNORECASE:
            return any(_matches(item, variant, flags) for variant in {char, char.lower(), char.upper()})
        return _matches(item, char, flags)

    # -- what a part matches at least

    def _witness(self, items: Items) -> str:
        """A short text the items match (best effort: assertions are left out)."""
        return "".join(self._witness_of(op, av) for op, av in items)

    def _witness_of(self, op: Any, av: Any) -> str:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            return next((char for char in self.chars if self._atom((op, av), char)), "")
        if op is _c.SUBPATTERN:
            return self._witness(av[3])
        if op is _c.ATOMIC_GROUP:
            return self._witness(av)
        if op is _c.BRANCH:
            return min((self._witness(branch) for branch in av[1]), key=len)
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            rounds: int = av[0]
            return self._witness(av[2]) * rounds
        return ""

    def _nullable(self, items: Items) -> bool:
        return all(self._ways([item], "")[0] for item in items)


def _flatten(items: Items) -> list[tuple[Any, Any]]:
    """The items with their plain groups opened (a group does not change what matches) and every
    child sequence flattened the same way."""
    flat: list[tuple[Any, Any]] = []
    for op, av in items:
        if op is _c.SUBPATTERN and not av[1] and not av[2]:
            flat.extend(_flatten(av[3]))
        elif op is _c.SUBPATTERN:
            flat.append((op, (av[0], av[1], av[2], _flatten(av[3]))))
        elif op is _c.BRANCH:
            flat.append((op, (av[0], [_flatten(branch) for branch in av[1]])))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            flat.append((op, (av[0], av[1], _flatten(av[2]))))
        elif op is _c.ATOMIC_GROUP:
            flat.append((op, _flatten(av)))
        elif op is _c.GROUPREF_EXISTS:
            flat.append((op, (av[0], _flatten(av[1]), _flatten(av[2]) if av[2] else None)))
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            flat.append((op, (av[0], _flatten(av[1]), av[1].getwidth()[0])))
        else:
            flat.append((op, av))
    return flat


def _may_fail(items: Items) -> bool:
    """Whether the items can fail where they stand (only optional repeats never do)."""
    for op, av in items:
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT) and av[0] == 0:
            continue
        if op is _c.SUBPATTERN and not _may_fail(av[3]):
            continue
        return True
    return False


def _varies(op: Any, av: Any) -> bool:
    """Whether an item is, or holds, a repeat of many rounds that can give back what it took."""
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        return _large(av[1]) or any(_varies(*item) for item in av[2])
    return any(_varies(*item) for child in _children(op, av) for item in child)


def _first(ways: Counter[int]) -> Counter[int]:
    """An atomic part keeps one way: its longest (what a greedy engine finds first)."""
    return Counter({max(ways): 1}) if ways else Counter()


def _children(op: Any, av: Any) -> list[Items]:
    if op is _c.SUBPATTERN:
        return [av[3]]
    if op is _c.BRANCH:
        return list(av[1])
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        return [av[2]]
    if op is _c.GROUPREF_EXISTS:
        return [av[1], *([av[2]] if av[2] else [])]
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        return [av[1]]
    return []  # atomic and possessive parts never give back


def _collect_atoms(items: Items, atoms: list[tuple[Any, Any]]) -> None:
    for op, av in items:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            atoms.append((op, av))
        elif op is _c.SUBPATTERN:
            _collect_atoms(av[3], atoms)
        elif op is _c.BRANCH:
            for branch in av[1]:
                _collect_atoms(branch, atoms)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            _collect_atoms(av[2], atoms)
        elif op is _c.ATOMIC_GROUP:
            _collect_atoms(av, atoms)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            _collect_atoms(av[1], atoms)
        elif op is _c.GROUPREF_EXISTS:
            _collect_atoms(av[1], atoms)
            _collect_atoms(av[2] or [], atoms)


def _matches(item: tuple[Any, Any], char: str, flags: int) -> bool:
    op, av = item
    if op is _c.LITERAL:
        return char == chr(av)
    if op is _c.NOT_LITERAL:
        return char != chr(av)
    if op is _c.ANY:
        return char != "\n" or bool(flags & _DOTALL)
    negate = any(kind is _c.NEGATE for kind, _ in av)
    return any(_member(kind, value, char, flags) for kind, value in av) != negate


def _member(kind: Any, value: Any, char: str, flags: int) -> bool:
    """Whether one item of a character class takes `char`."""
    if kind is _c.LITERAL:
        return char == chr(value)
    if kind is _c.RANGE:
        return bool(value[0] <= ord(char) <= value[1])
    return kind is _c.CATEGORY and _category(value, char, flags)


def _category(category: Any, char: str, flags: int) -> bool:
    if flags & _ASCII and not char.isascii():
        inside = False
        return not inside if category in _NEGATED else inside
    tests: dict[Any, Callable[[str], bool]] = {
        _c.CATEGORY_DIGIT: str.isdecimal,
        _c.CATEGORY_SPACE: str.isspace,
        _c.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
        _c.CATEGORY_LINEBREAK: lambda c: c == "\n",
    }
    for positive, negative in _PAIRS:
        if category is positive:
            return tests[positive](char)
        if category is negative:
            return not tests[positive](char)
    return False


_PAIRS = (
    (_c.CATEGORY_DIGIT, _c.CATEGORY_NOT_DIGIT),
    (_c.CATEGORY_SPACE, _c.CATEGORY_NOT_SPACE),
    (_c.CATEGORY_WORD, _c.CATEGORY_NOT_WORD),
    (_c.CATEGORY_LINEBREAK, _c.CATEGORY_NOT_LINEBREAK),
)
_NEGATED = {negative for _, negative in _PAIRS}


def _at(where: Any, text: str, position: int) -> bool:
    if where in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING, _c.AT_BEGINNING_LINE):
        return position == 0 or (where is _c.AT_BEGINNING_LINE and text[position - 1] == "\n")
    if where in (_c.AT_END, _c.AT_END_STRING, _c.AT_END_LINE):
        return position == len(text) or (where is not _c.AT_END_STRING and text[position:] == "\n")
    before = position > 0 and _word(text[position - 1])
    after = position < len(text) and _word(text[position])
    if where in (_c.AT_BOUNDARY, _c.AT_UNI_BOUNDARY, _c.AT_LOC_BOUNDARY):
        return before != after
    return before == after  # the non-boundaries


_STARTS = (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING)


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"
