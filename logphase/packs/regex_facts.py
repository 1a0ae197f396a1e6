"""What a regex's parse tree tells before it runs: the literal every match contains, the text it
starts with, the characters it can start with. The matcher's prefilters and the rule index use them."""

from __future__ import annotations

import re as stdlib_re
import string
from typing import Any

WORD = stdlib_re.compile(r"[a-z0-9_]+")
# Rules anchored at the message start are indexed by this many leading characters.
LEAD_KEY = 2
# A literal's edge words are indexed by this many characters (the start of its last word, the end
# of its first): they may be glued to more word characters in the line.
EDGE_KEY = 3
# A group name the `regex` module allows twice (`(?P<rank>…)` in two optional places, TRT-LLM's prefix):
# the stdlib refuses it, though a name changes nothing a regex matches. The facts are read from the
# same regex with its groups unnamed (a `(?P<` after an escaping backslash is no group).
REUSED_NAME = "redefinition of group name"
NAMED_GROUP = stdlib_re.compile(r"(?<!\\)((?:\\\\)*)\(\?P<\w+>")


def parse_regex(pattern_text: str) -> Any:
    """The stdlib's parse of a regex, or of the same regex with its groups unnamed where it names a
    group twice (REUSED_NAME); raises where the stdlib reads neither (syntax only `regex` knows)."""
    try:
        return stdlib_re._parser.parse(pattern_text)  # type: ignore[attr-defined]
    except stdlib_re.error as error:
        if REUSED_NAME not in str(error):
            raise
    return stdlib_re._parser.parse(NAMED_GROUP.sub(r"\1(?:", pattern_text))  # type: ignore[attr-defined]


def derive_literal(pattern_text: str, minimum: int = 3) -> str | None:
    """The longest run of plain characters every match must contain, for the prefilter.

    Walks the parsed regex's top-level sequence only: anything under a branch, an optional or a
    repeat may be absent, so it cannot be required. None when nothing is required (or the regex
    uses syntax only the `regex` module knows)."""
    try:
        parsed = parse_regex(pattern_text)
        constants = stdlib_re._constants  # type: ignore[attr-defined]
    except Exception:  # regex-module syntax: no literal is derived, the rule still works
        return None
    best, run = "", []
    for op, argument in parsed:
        if op is constants.LITERAL:
            run.append(chr(argument))
            continue
        if op is constants.SUBPATTERN and argument[3] and all(o is constants.LITERAL for o, _ in argument[3]):
            # a plain capture group such as (?P<x>abc): its text is still required
            run.extend(chr(a) for _, a in argument[3])
            continue
        best = max(best, "".join(run), key=len)
        run = []
    best = max(best, "".join(run), key=len)
    return best if len(best) >= minimum else None


def group_names(pattern_text: str) -> frozenset[str] | None:
    """The named groups of a regex, read from its parse (None: syntax only the `regex` module knows)."""
    try:
        parsed = stdlib_re._parser.parse(pattern_text)  # type: ignore[attr-defined]
    except Exception:
        return None
    return frozenset(parsed.state.groupdict)


ASCII_CATEGORIES = {
    stdlib_re._constants.CATEGORY_WORD: string.ascii_letters + string.digits + "_",  # type: ignore[attr-defined]
    stdlib_re._constants.CATEGORY_DIGIT: string.digits,  # type: ignore[attr-defined]
}


def leading_literal(pattern_text: str) -> str | None:
    """The text every match starts with, for a regex anchored with `^`: `^Load weight begin\\.` →
    `Load weight begin.`; None when the regex is not anchored or starts with anything else."""
    try:
        parsed = list(parse_regex(pattern_text))
        constants = stdlib_re._constants  # type: ignore[attr-defined]
    except Exception:  # regex-module syntax: not indexed, always tried
        return None
    if not parsed or parsed[0] != (constants.AT, constants.AT_BEGINNING):
        return None
    lead = []
    for op, argument in parsed[1:]:
        if op is not constants.LITERAL:
            break
        lead.append(chr(argument))
    return "".join(lead) or None


def index_key(pattern_text: str, literal: str | None) -> tuple[str, str] | None:
    """Where `PackSet.candidate_rules` files a rule with this regex and literal (see
    `PackSet._index_literals`)."""
    lead = leading_literal(pattern_text)
    if lead is not None and len(lead) >= LEAD_KEY:
        return ("lead", lead[:LEAD_KEY].lower())
    if literal is None:
        return None
    literal = literal.lower()
    inner = _inner_words(literal)
    if inner:
        return ("word", max(inner, key=len))
    words = [(found.group(), found.start(), found.end()) for found in WORD.finditer(literal)]
    last = [w for w, start, _ in words if start > 0 and len(w) >= EDGE_KEY]
    if last:
        return ("starts", last[-1][:EDGE_KEY])
    first = [w for w, _, end in words if end < len(literal) and len(w) >= EDGE_KEY]
    if first:
        return ("ends", first[0][-EDGE_KEY:])
    return None


def _inner_words(literal: str) -> list[str]:
    """Words of a lower-cased literal that are whole words wherever the literal appears."""
    words = []
    for found in WORD.finditer(literal):
        start, end = found.span()
        if start > 0 and end < len(literal) and len(found.group()) >= 2:
            words.append(found.group())
    return words


def first_characters(pattern_text: str) -> frozenset[str] | None:
    """The characters a match of an anchored regex can start with, or None when that is not a
    small known set (an optional first item, a negated class, syntax only `regex` knows)."""
    try:
        parsed = parse_regex(pattern_text)
        constants = stdlib_re._constants  # type: ignore[attr-defined]
    except Exception:  # regex-module syntax: no gate, the prefix is always tried
        return None

    def first(items: Any) -> set[str] | None:
        for op, argument in items:
            if op is constants.AT:
                continue  # ^
            if op is constants.LITERAL:
                return {chr(argument)}
            if op is constants.IN:
                chars: set[str] = set()
                for kind, value in argument:
                    if kind is constants.LITERAL:
                        chars.add(chr(value))
                    elif kind is constants.RANGE and value[1] - value[0] < 256:
                        chars.update(chr(c) for c in range(value[0], value[1] + 1))
                    elif kind is constants.CATEGORY and value in ASCII_CATEGORIES:
                        chars.update(ASCII_CATEGORIES[value])  # non-ASCII starts are never gated
                    else:
                        return None
                return chars
            if op is constants.SUBPATTERN:
                return first(argument[3])
            if op is constants.BRANCH:
                union: set[str] = set()
                for branch in argument[1]:
                    chars_of = first(branch)
                    if chars_of is None:
                        return None
                    union |= chars_of
                return union
            if op in (constants.MAX_REPEAT, constants.MIN_REPEAT) and argument[0] >= 1:
                return first(argument[2])
            return None
        return None

    items = [item for item in parsed if item[0] is not constants.AT]
    chars = first(items)
    if not chars:
        return None
    if len(items) > 1 and items[0][0] is constants.LITERAL:
        # `^\[rank\d+\]:` and `^\[\d{4}-…`: two characters tell them apart
        second = first(items[1:])
        if second:
            return frozenset(next(iter(chars)) + char for char in second)
    return frozenset(chars)
