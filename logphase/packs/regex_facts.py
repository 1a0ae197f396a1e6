"""What a regex's parse tree tells before it runs: the literal every match contains, the text it
starts with, the characters it can start with. The matcher's prefilters and the rule index use them."""

from __future__ import annotations

import re as stdlib_re
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


def branch_leads(pattern_text: str) -> tuple[str, ...]:
    """The texts a match starts with, one for each top-level branch of a regex anchored with `^`:
    `^(?:Checking if \\w+ platform|Confirmed \\w+)` → `Checking if `, `Confirmed `; `^Load weight` → `Load weight`.
    A branch that starts with anything but plain characters gives none; so does a regex not anchored."""
    try:
        parsed = list(parse_regex(pattern_text))
        constants = stdlib_re._constants  # type: ignore[attr-defined]
    except Exception:  # regex-module syntax: no leads
        return ()
    if not parsed or parsed[0] != (constants.AT, constants.AT_BEGINNING):
        return ()
    return tuple(lead for lead in _leads(parsed[1:], constants) if lead)


def _leads(items: list[Any], constants: Any) -> list[str]:
    """The plain characters each way through `items` starts with: a leading run, then a non-capturing or
    capturing group's branches, each continued by its own run only (what follows the group is not read). An optional
    group (`(?:\\[Rank \\d+\\] )?`, NCCL 2.29's tag before its init line) is two ways: through it, and past it."""
    run: list[str] = []
    for index, (op, argument) in enumerate(items):
        if op is constants.LITERAL:
            run.append(chr(argument))
            continue
        lead = "".join(run)
        if op is constants.SUBPATTERN and not argument[1] and not argument[2]:
            return [lead + inner for inner in _leads(list(argument[3]), constants)]
        if op is constants.BRANCH and not run:
            return [inner for branch in argument[1] for inner in _leads(list(branch), constants)]
        if op is constants.MAX_REPEAT and argument[0] == 0 and argument[1] == 1:
            through = [lead + inner for inner in _leads(list(argument[2]), constants)]
            return through + [lead + inner for inner in _leads(items[index + 1 :], constants)]
        return [lead]
    return ["".join(run)]


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
                return class_characters(argument, constants)  # non-ASCII starts are never gated
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


# The ASCII characters each class escape matches (the stdlib's own answer, asked once): a message
# whose first character is not ASCII is never gated (`start_characters`).
_CLASS_ESCAPES = {"DIGIT": r"\d", "SPACE": r"\s", "WORD": r"\w"}
ASCII_CLASSES = {
    getattr(stdlib_re._constants, f"CATEGORY{variant}_{name}"): frozenset(  # type: ignore[attr-defined]
        chr(code) for code in range(128) if stdlib_re.fullmatch(escape, chr(code))
    )
    for name, escape in _CLASS_ESCAPES.items()
    for variant in ("", "_UNI")
}


def class_characters(items: Any, constants: Any) -> set[str] | None:
    """The ASCII characters a parsed character class (`[…]`) matches; None for a negated class, a large range or a
    class escape with no ASCII table."""
    chars: set[str] = set()
    for kind, value in items:
        if kind is constants.LITERAL:
            chars.add(chr(value))
        elif kind is constants.RANGE and value[1] - value[0] < 256:
            chars.update(chr(code) for code in range(value[0], value[1] + 1))
        elif kind is constants.CATEGORY and value in ASCII_CLASSES:
            chars.update(ASCII_CLASSES[value])
        else:
            return None
    return chars


def start_characters(pattern_text: str, ignore_case: bool) -> frozenset[str] | None:
    """The lower-cased first characters a match of a regex anchored at the text's start (`^…`, searched
    without MULTILINE) can begin with: a message whose lower-cased first character is ASCII and not in
    the set cannot match. None where any start is possible or the reading stops: a regex not anchored,
    one that can match the empty text (`^`, `^(?:a)?`), a wildcard or negated class first, syntax only
    `regex` knows, a non-ASCII character read without case. Zero-width items (`\\b`, lookarounds) are
    passed over: a superset of the starts is all a gate needs."""
    try:
        parsed = parse_regex(pattern_text)
    except Exception:  # regex-module syntax: not gated, always tried
        return None
    constants = stdlib_re._constants  # type: ignore[attr-defined]
    flags = parsed.state.flags
    if flags & stdlib_re.MULTILINE or flags & stdlib_re.LOCALE:
        return None
    items = list(parsed)
    anchors = ((constants.AT, constants.AT_BEGINNING), (constants.AT, constants.AT_BEGINNING_STRING))
    if not items or items[0] not in anchors:
        return None
    found = _sequence_starts(items[1:], ignore_case or bool(flags & stdlib_re.IGNORECASE), constants)
    if found is None or found[1]:
        return None
    return frozenset(char.lower()[:1] for char in found[0])


def _sequence_starts(items: Any, caseless: bool, constants: Any) -> tuple[set[str], bool] | None:
    """(The characters a sequence's match can start with, whether it can match the empty text); None: unknown."""
    starts: set[str] = set()
    for item in items:
        found = _item_starts(item, caseless, constants)
        if found is None:
            return None
        starts |= found[0]
        if not found[1]:
            return starts, False
    return starts, True


def _item_starts(item: Any, caseless: bool, constants: Any) -> tuple[set[str], bool] | None:
    op, argument = item
    if op in (constants.AT, constants.ASSERT, constants.ASSERT_NOT):
        return set(), True  # zero-width
    if op is constants.LITERAL:
        return _consuming(_cased({chr(argument)}, caseless))
    if op is constants.IN:
        chars = class_characters(argument, constants)
        return None if chars is None else _consuming(_cased(chars, caseless))
    if op is constants.SUBPATTERN:
        _group, add_flags, del_flags, body = argument
        inner = (caseless or bool(add_flags & stdlib_re.IGNORECASE)) and not del_flags & stdlib_re.IGNORECASE
        return _sequence_starts(body, inner, constants)
    if op is constants.ATOMIC_GROUP:
        return _sequence_starts(argument, caseless, constants)
    if op is constants.BRANCH:
        starts: set[str] = set()
        empty = False
        for branch in argument[1]:
            found = _sequence_starts(branch, caseless, constants)
            if found is None:
                return None
            starts |= found[0]
            empty = empty or found[1]
        return starts, empty
    if op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT):
        found = _sequence_starts(argument[2], caseless, constants)
        if found is None:
            return None
        return found[0], found[1] or argument[0] == 0
    return None  # `.`, a negated literal, a back-reference, a conditional: any start


def _consuming(chars: set[str] | None) -> tuple[set[str], bool] | None:
    return None if chars is None else (chars, False)


def _cased(chars: set[str], caseless: bool) -> set[str] | None:
    """The characters as a caseless regex matches them; None where one is not ASCII (Unicode folds reach
    across: `ſ` matches `s`, the Kelvin sign `k`)."""
    if caseless and not all(char.isascii() for char in chars):
        return None
    return chars  # both cases of an ASCII letter: the set is lower-cased, as the line it gates


MAX_FACTORS = 12  # a rule with more alternatives than this is gated by its start only


def any_of_literals(pattern_text: str) -> tuple[str, ...] | None:
    """Texts one of which every match of the regex contains (`^(?:ray\\.exceptions\\.)?(?:WorkerCrashedError|
    NodeDiedError)` → both names): what `derive_literal` cannot give where the required text is under a
    branch. Read from the top-level sequence, where each item is required: a run of plain characters,
    or a group whose every branch holds one. None where no item gives at most MAX_FACTORS texts of
    ASCII (a lower-cased text must stay a substring of the lower-cased line), or the regex has flags
    of its own (`(?i)`: the texts are matched against the line as written or lower-cased, by the rule)."""
    try:
        parsed = parse_regex(pattern_text)
    except Exception:
        return None
    if parsed.state.flags & ~stdlib_re.UNICODE:
        return None
    found = _sequence_texts(list(parsed), stdlib_re._constants)  # type: ignore[attr-defined]
    if not found or len(found) > MAX_FACTORS or not all(text.isascii() for text in found):
        return None
    return tuple(sorted(found))


def _sequence_texts(items: list[Any], constants: Any) -> set[str] | None:
    """The best set of texts one of which a match of the sequence holds: of runs of plain characters and of
    required groups, the one whose shortest text is longest (fewest texts among equals)."""
    options: list[set[str]] = []
    run: list[str] = []
    for op, argument in items:
        if op is constants.LITERAL:
            run.append(chr(argument))
            continue
        if run:
            options.append({"".join(run)})
            run = []
        if op is constants.SUBPATTERN and not argument[1] and not argument[2]:
            found = _sequence_texts(list(argument[3]), constants)
        elif op is constants.BRANCH:
            found = _branch_texts(argument[1], constants)
        elif op in (constants.MAX_REPEAT, constants.MIN_REPEAT, constants.POSSESSIVE_REPEAT) and argument[0] >= 1:
            found = _sequence_texts(list(argument[2]), constants)
        else:
            found = None
        if found:
            options.append(found)
    if run:
        options.append({"".join(run)})
    if not options:
        return None
    return max(options, key=lambda texts: (min(len(text) for text in texts), -len(texts)))


def _branch_texts(branches: list[Any], constants: Any) -> set[str] | None:
    union: set[str] = set()
    for branch in branches:
        found = _sequence_texts(list(branch), constants)
        if not found:
            return None
        union |= found
    return union
