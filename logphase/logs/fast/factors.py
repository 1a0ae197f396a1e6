"""Required factors of a pack regex: byte strings one of which every line it matches contains (pure)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from logphase.packs import PrefixRule, Rule

# A factor shorter than this is in nearly every line: no use as a filter.
MIN_FACTOR = 3
# A pack literal this long names the line well; shorter ones (`"POST /`) may be in most lines.
GOOD_LITERAL = 8
# Alternatives multiply across a regex's branches; beyond this the sets stop paying for themselves.
MAX_ALTERNATIVES = 32
# Syntax only the `regex` module reads: the stdlib parser would misread such a pattern.
REGEX_ONLY_SYNTAX = ("[[:", "\\p", "\\P", "(?V", "\\L<", "(?r", "(?f", "(?b", "(?e", "(?p", "{e")


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
    except Exception:
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
    def __init__(self, min_length: int = MIN_FACTOR, *, lookarounds: bool = False) -> None:
        self.min_length = min_length  # the shortest string a kept set may hold
        # a positive lookaround's strings are the line's too (`(?=\w*Allreduce)\w++ is disabled`): required sets
        self.lookarounds = lookarounds
        self.caseless = False
        self.depth = 0
        self.all_required: list[frozenset[str]] = []
        self.c = re._constants  # type: ignore[attr-defined]

    def sequence(self, items: Sequence[Any]) -> tuple[set[str] | None, set[str] | None]:
        """(the exact strings the sequence matches, or None; a set one of which it contains)."""
        best: set[str] | None = None
        run: set[str] = {""}
        whole: set[str] | None = {""}
        top = self.depth == 0
        self.depth += 1
        for op, argument in items:
            exact, required = self.node(op, argument)
            if exact is None:
                best = _better(_better(best, self._keep(run, top)), self._keep(required, top))
                run, whole = {""}, None
                continue
            if len(run) * len(exact) > MAX_ALTERNATIVES:
                best, run = _better(best, self._keep(run, top)), set(exact)
            else:
                run = {a + b for a in run for b in exact}
            if whole is not None:
                whole = {a + b for a in whole for b in exact} if len(whole) * len(exact) <= MAX_ALTERNATIVES else None
        self.depth -= 1
        return whole, _better(best, self._keep(run, top))

    def _keep(self, found: set[str] | None, top: bool) -> set[str] | None:
        """Every required set of the pattern's top level is kept: a line must hold one of each."""
        if top and found and min(map(len, found)) >= self.min_length:
            self.all_required.append(frozenset(found))
        return found

    def node(self, op: Any, argument: Any) -> tuple[set[str] | None, set[str] | None]:
        c = self.c
        if op is c.LITERAL:
            return {chr(argument)}, None
        if op is c.ASSERT and self.lookarounds:
            return self._lookaround(argument[1])
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

    def _lookaround(self, items: Any) -> tuple[set[str] | None, set[str] | None]:
        """A positive lookahead's or lookbehind's: zero width, but what it holds is in the line (where its
        case is known: a caseless one adds nothing)."""
        inner = _FactorWalker(self.min_length, lookarounds=True)
        inner.depth = 1  # its sets are its own, not the pattern's top level
        exact, required = inner.sequence(list(items))
        found = exact if exact is not None else required
        if inner.caseless or not found or min(map(len, found)) < self.min_length:
            return {""}, None
        return None, found


def regex_requirements(pattern: str) -> list[frozenset[bytes]]:
    """Every set of strings a match must hold one of (case-sensitive patterns only): a line
    without one of each cannot match, which spares asking the regex."""
    if any(mark in pattern for mark in REGEX_ONLY_SYNTAX):
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = re._parser.parse(pattern)  # type: ignore[attr-defined]
    except Exception:
        return []
    walker = _FactorWalker(lookarounds=True)
    walker.sequence(list(parsed))
    if walker.caseless or parsed.state.flags & re.IGNORECASE:
        return []
    return [frozenset(text.encode() for text in found) for found in walker.all_required]


def prefix_needs(prefix: PrefixRule) -> frozenset[bytes] | None:
    """Strings one of which a line must hold for the prefix rule to parse it (however short: a
    line's start, not a filter), or None when none is known. The regex's own, where the stdlib reads
    it (a group's name changes nothing it matches: `regex` allows one name twice), else its literal."""
    pattern = prefix.pattern.pattern
    best: set[str] | None = None
    if "(?P=" not in pattern and not any(mark in pattern for mark in REGEX_ONLY_SYNTAX):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                parsed = re._parser.parse(re.sub(r"\(\?P<\w+>", "(?:", pattern))  # type: ignore[attr-defined]
        except Exception:
            parsed = None
        if parsed is not None and not parsed.state.flags & re.IGNORECASE:
            walker = _FactorWalker(min_length=1)
            walker.sequence(list(parsed))
            if not walker.caseless:
                for found in walker.all_required:
                    best = _better(best, set(found))
    if prefix.literal:
        best = _better(best, {prefix.literal})
    return frozenset(text.encode() for text in best) if best else None


def _better(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """The more selective required set: the longer shortest string, then the fewer strings."""
    if not b or (a and (min(map(len, a)), -len(a)) >= (min(map(len, b)), -len(b))):
        return a
    return b


def rule_factors(rule: Rule, prefixes: dict[str, PrefixRule]) -> frozenset[Factor] | None:
    """What every line this rule matches contains: the pack's literal (which the matcher's
    prefilter requires anyway) when it is long enough to be the pack author's pick, else the
    regex's own factors when they are at least as selective, else the literal, else the factors of
    the prefixes the rule needs (`after_prefix`)."""
    literal = rule.literal
    extracted = (
        None
        if literal is not None and len(literal) >= GOOD_LITERAL
        else regex_factors(rule.pattern.pattern, caseless=rule.ignore_case)
    )
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
