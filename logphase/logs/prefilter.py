"""One pass over a log's bytes that hands the matcher only the lines it needs: grep speed on big logs."""

from __future__ import annotations

import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Protocol

from logphase.logs.matcher import BLOCK_MARKERS, FRAME_HEADERS, Event, SourceMatcher
from logphase.logs.reader import MAX_LINE_BYTES, Line, LogSource, _clean, read_errors
from logphase.packs import PackSet, PrefixRule, Rule
from logphase.phases import DRAFT_PHASES, EventKind

try:  # the optional accelerator: `pip install logphase[fast]`
    import hyperscan
except ImportError:  # pragma: no cover - exercised where hyperscan is not installed
    hyperscan = None

# Big chunks: the per-chunk Python work is constant, the scan itself is C.
CHUNK_BYTES = 16 << 20
# A factor shorter than this is in nearly every line: no use as a filter.
MIN_FACTOR = 3
# Alternatives multiply across a regex's branches; beyond this the sets stop paying for themselves.
MAX_ALTERNATIVES = 32
# A line shape seen this often in steady lines becomes a template (a recompile of the scanners).
ADOPT_AFTER = 2
MAX_TEMPLATES = 64
CONTEXT_BEFORE = 2
CONTEXT_AFTER = 3
# Captures the timeline reads from an event: a rule with one of these is never summarised.
TIMELINE_CAPTURES = frozenset(
    {"tags", "rank", "version", "comm", "nranks", "seq", "last_enqueued", "last_completed", "done", "total"}
)
# Lines that always reach the matcher: progress-bar rewrites, colour codes, a bar glued to a line,
# and the non-ASCII letters whose lower case is ASCII (a caseless literal could hide behind them).
ALWAYS_BYTES = (b"\r", b"\x1b", b"%|")
UNICODE_CASE_BYTES = (b"\xc4\xb0", b"\xe2\x84\xaa", b"\xc5\xbf")
# Syntax only the `regex` module reads: the stdlib parser would misread such a pattern.
REGEX_ONLY_SYNTAX = ("[[:", "\\p", "\\P", "(?V", "\\L<", "(?r", "(?f", "(?b", "(?e", "(?p", "{e")

Factors = frozenset[bytes]


# --- required factors of a regex -------------------------------------------------------------------


@dataclass(frozen=True)
class Factor:
    """A byte string that must be in any line a rule matches (`caseless`: in any case)."""

    text: bytes
    caseless: bool


def regex_factors(pattern: str, *, caseless: bool = False) -> frozenset[Factor] | None:
    """Strings one of which every match of `pattern` contains, or None when no useful set exists.

    Reads the stdlib parse of the pattern: a branch contributes the union of its alternatives, an
    optional part contributes nothing, adjacent literals multiply into longer strings; of all
    required sets the one whose shortest string is longest wins."""
    if any(mark in pattern for mark in REGEX_ONLY_SYNTAX):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = re._parser.parse(pattern)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - regex-module syntax: no factors, the rule is always tried
        return None
    walker = _FactorWalker()
    _, required = walker.sequence(list(parsed))
    caseless = caseless or bool(parsed.state.flags & re.IGNORECASE) or walker.caseless
    if not required or min(len(text) for text in required) < MIN_FACTOR:
        return None
    if caseless and not all(text.isascii() for text in required):
        return None  # bytes compare case only in ASCII
    return frozenset(Factor((text.lower() if caseless else text).encode(), caseless) for text in required)


class _FactorWalker:
    def __init__(self) -> None:
        self.caseless = False
        self.c = re._constants  # type: ignore[attr-defined]

    def sequence(self, items: Sequence[Any]) -> tuple[set[str] | None, set[str] | None]:
        """(the exact strings the sequence matches, or None; a set one of which it contains)."""
        best: set[str] | None = None
        run: set[str] = {""}
        whole: set[str] | None = {""}
        for op, argument in items:
            exact, required = self.node(op, argument)
            if exact is None:
                best = _better(_better(best, run), required)
                run, whole = {""}, None
                continue
            if len(run) * len(exact) > MAX_ALTERNATIVES:
                best, run = _better(best, run), set(exact)
            else:
                run = {a + b for a in run for b in exact}
            if whole is not None:
                whole = {a + b for a in whole for b in exact} if len(whole) * len(exact) <= MAX_ALTERNATIVES else None
        return whole, _better(best, run)

    def node(self, op: Any, argument: Any) -> tuple[set[str] | None, set[str] | None]:
        c = self.c
        if op is c.LITERAL:
            return {chr(argument)}, None
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            return {""}, None  # zero width
        if op is c.IN:
            if 0 < len(argument) <= 4 and all(kind is c.LITERAL for kind, _ in argument):
                return {chr(value) for _, value in argument}, None
            return None, None
        if op is c.SUBPATTERN:
            _, add_flags, _, items = argument
            if add_flags & re.IGNORECASE:
                self.caseless = True
            return self.sequence(items)
        if op is c.ATOMIC_GROUP:
            return self.sequence(argument)
        if op is c.BRANCH:
            results = [self.sequence(items) for items in argument[1]]
            if all(exact is not None for exact, _ in results):
                union = set().union(*(exact for exact, _ in results if exact is not None))
                if len(union) <= MAX_ALTERNATIVES:
                    return union, None
            options = [exact if exact is not None else required for exact, required in results]
            if all(option for option in options):
                return None, set().union(*(o for o in options if o))
            return None, None
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, high, items = argument
            exact, required = self.sequence(items)
            if low == 0:
                return (exact | {""}, None) if high == 1 and exact is not None else (None, None)
            if low == high == 1:
                return exact, required
            return None, exact if exact is not None else required
        return None, None


def _better(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """The more selective required set: the longer shortest string, then the fewer strings."""
    if not b or (a and (min(map(len, a)), -len(a)) >= (min(map(len, b)), -len(b))):
        return a
    return b


def rule_factors(rule: Rule, prefixes: dict[str, PrefixRule]) -> frozenset[Factor] | None:
    """What every line this rule matches contains: the regex's own factors when they are at least
    as selective as the pack's literal, else the literal (which the matcher's prefilter requires
    anyway), else the factors of the prefixes the rule needs (`after_prefix`)."""
    extracted = regex_factors(rule.pattern.pattern, caseless=rule.ignore_case)
    literal = rule.literal
    if extracted and (literal is None or min(len(f.text) for f in extracted) >= len(literal.encode())):
        return extracted
    if literal is not None:
        if rule.ignore_case and not literal.isascii():
            return None
        return frozenset({Factor(literal.encode(), rule.ignore_case)})
    if rule.after_prefix:
        found: set[Factor] = set()
        for prefix_id in rule.after_prefix:
            prefix = prefixes.get(prefix_id)
            factors = regex_factors(prefix.pattern.pattern) if prefix else None
            if not factors:
                return None
            found |= factors
        return frozenset(found)
    return None


def is_steady(rule: Rule) -> bool:
    """A rule whose repeats only move the timeline's "last seen" marks: a phase mark that carries
    nothing the timeline counts. Its lines can be summarised by the first and last of a run."""
    return (
        rule.kind is EventKind.MARK
        and rule.phase is not None
        and not rule.in_block
        and not rule.opens_block
        and not TIMELINE_CAPTURES & set(rule.pattern.groupindex)
    )


# --- the plan: one per pack set ----------------------------------------------------------------------


@dataclass
class Plan:
    """The packs turned into what the byte scan needs: the factors that make a line a candidate,
    the steady rules and the factors that identify them."""

    packs: PackSet
    enabled: bool
    candidates: list[Factor]
    steady: dict[bytes, Rule]  # factor → the one steady rule it belongs to
    triggers: list[bytes]  # regexes (bytes) whose lines always reach the matcher
    reason: str = ""

    @property
    def steady_factors(self) -> list[bytes]:
        return sorted(self.steady)


_PLANS: dict[tuple[int, tuple[str, ...]], Plan] = {}


def plan_for(packs: PackSet, triggers: Sequence[re.Pattern[str]] = ()) -> Plan:
    """The scan plan of a pack set (cached: packs are immutable once loaded)."""
    key = (id(packs), tuple(t.pattern for t in triggers))
    plan = _PLANS.get(key)
    if plan is None or plan.packs is not packs:
        plan = _PLANS[key] = _build_plan(packs, triggers)
    return plan


def _build_plan(packs: PackSet, triggers: Sequence[re.Pattern[str]]) -> Plan:
    prefixes = {p.id: p for p in packs.prefixes}
    owners: dict[bytes, list[Rule]] = {}
    candidates: set[Factor] = set()
    unfiltered: list[str] = []
    steady_factors: dict[str, frozenset[Factor]] = {}
    for rule in packs.rules:
        factors = rule_factors(rule, prefixes)
        if factors is None:
            unfiltered.append(rule.id)
            continue
        if is_steady(rule) and not any(f.caseless for f in factors):
            steady_factors[rule.id] = factors
            for factor in factors:
                owners.setdefault(factor.text, []).append(rule)
        else:
            candidates |= factors
    steady: dict[bytes, Rule] = {}
    for rule in packs.rules:
        factors = steady_factors.get(rule.id)
        if factors is None:
            continue
        # a factor two steady rules share cannot tell their runs apart: both go to the matcher
        if all(len(owners[f.text]) == 1 for f in factors):
            steady.update((f.text, rule) for f in factors)
        else:
            candidates |= factors
    # a steady factor inside another steady factor would make one line two kinds of run
    for text in list(steady):
        if any(text != other and text in other for other in steady):
            pass
    trigger_patterns = [re.escape(b).replace(b"\\\r", b"\\r") for b in ALWAYS_BYTES]
    if any(f.caseless for f in candidates):
        trigger_patterns += [re.escape(b) for b in UNICODE_CASE_BYTES]
    markers = {m.encode() for m in (*BLOCK_MARKERS, *FRAME_HEADERS)}
    trigger_patterns += [re.escape(m) for m in sorted(markers)]
    trigger_patterns += [widen_classes(t.pattern).encode() for t in triggers]
    return Plan(
        packs=packs,
        enabled=not unfiltered,
        candidates=sorted(candidates, key=lambda f: (f.text, f.caseless)),
        steady=steady,
        triggers=trigger_patterns,
        reason=f"rules without a literal to filter on: {', '.join(unfiltered)}" if unfiltered else "",
    )


def widen_classes(pattern: str) -> str:
    """A str regex as a bytes regex that matches at least as much: `\\s`, `\\d` and `\\w` also
    take any non-ASCII byte (the str versions match Unicode spaces, digits and letters)."""
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            if escaped in "sdw":
                extra = r"\x1c-\x1f\x80-\xff" if escaped == "s" else r"\x80-\xff"
                out.append(f"\\{escaped}{extra}" if in_class else f"[\\{escaped}{extra}]")
            else:
                out.append(char + escaped)
            index += 2
            continue
        if char == "[" and not in_class:
            in_class = True
            if pattern[index + 1 : index + 2] == "^":
                out.append("[^")
                index += 2
                if pattern[index : index + 1] == "]":
                    out.append("]")
                    index += 1
                continue
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        index += 1
    return "".join(out)


# --- byte scanners: hyperscan when installed, the stdlib otherwise ----------------------------------


class Scanner(Protocol):
    def ends(self, data: bytes | bytearray, start: int, end: int) -> list[int]:
        """End offsets of every match in data[start:end]."""

    def first(self, data: bytes | bytearray, start: int, end: int) -> dict[int, int]:
        """Pattern id → end offset of its first match in data[start:end]."""


class _ReScanner:
    """The pure-Python scanner: one alternation, or one search per pattern for `first`."""

    def __init__(self, patterns: Sequence[tuple[bytes, bool]]) -> None:
        parts = [b"(?i:" + p + b")" if caseless else b"(?:" + p + b")" for p, caseless in patterns]
        self.all = re.compile(b"|".join(parts), re.MULTILINE) if parts else None
        self.each = [re.compile(part, re.MULTILINE) for part in parts]

    def ends(self, data: bytes | bytearray, start: int, end: int) -> list[int]:
        if self.all is None:
            return []
        return [found.end() for found in self.all.finditer(data, start, end)]

    def first(self, data: bytes | bytearray, start: int, end: int) -> dict[int, int]:
        found: dict[int, int] = {}
        for index, pattern in enumerate(self.each):
            match = pattern.search(data, start, end)
            if match is not None:
                found[index] = match.end()
        return found


class _HsScanner:
    """Hyperscan: every pattern in one database, scanned once."""

    def __init__(self, patterns: Sequence[tuple[bytes, bool]], *, single: bool) -> None:
        self.count = len(patterns)
        self.single = single
        self.db: Any = None
        if not patterns:
            return
        flags = []
        for _, caseless in patterns:
            flag = hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY
            if caseless:
                flag |= hyperscan.HS_FLAG_CASELESS
            if single:
                flag |= hyperscan.HS_FLAG_SINGLEMATCH
            flags.append(flag)
        self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.db.compile(
            expressions=[p for p, _ in patterns], ids=list(range(len(patterns))), elements=len(patterns), flags=flags
        )
        self.scratch = hyperscan.Scratch(self.db)

    def ends(self, data: bytes | bytearray, start: int, end: int) -> list[int]:
        found: list[int] = []
        if self.db is None or start >= end:
            return found

        def on_match(_id: int, _start: int, stop: int, _flags: int, _context: object) -> None:
            found.append(start + stop)

        self.db.scan(memoryview(data)[start:end], match_event_handler=on_match, scratch=self.scratch)
        found.sort()
        return found

    def first(self, data: bytes | bytearray, start: int, end: int) -> dict[int, int]:
        found: dict[int, int] = {}
        if self.db is None or start >= end:
            return found

        def on_match(pattern: int, _start: int, stop: int, _flags: int, _context: object) -> None:
            if pattern not in found:
                found[pattern] = start + stop

        self.db.scan(memoryview(data)[start:end], match_event_handler=on_match, scratch=self.scratch)
        return found


def make_scanner(patterns: Sequence[tuple[bytes, bool]], *, single: bool = False, accelerate: bool = True) -> Scanner:
    if accelerate and hyperscan is not None:
        try:
            return _HsScanner(patterns, single=single)
        except hyperscan.error:  # a pattern hyperscan does not support: the stdlib reads it all
            pass
    return _ReScanner(patterns)


def accelerated() -> bool:
    return hyperscan is not None
