"""One pass over a log's bytes that hands the matcher only the lines it needs: grep speed on big logs."""

from __future__ import annotations

import bisect
import importlib
import itertools
import lzma
import re
import tarfile
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any, Protocol

import zstandard

from logphase.errors import InputError
from logphase.logs.matcher import BLOCK_MARKERS, CHAINED, FRAME_HEADERS, Event, SourceMatcher
from logphase.logs.reader import CHUNK_BYTES as READ_BYTES
from logphase.logs.reader import MAX_LINE_BYTES, Line, LogSource, clean_line
from logphase.logs.timeline import DRAFT_REPEATED
from logphase.packs import PackSet, PrefixRule, Rule
from logphase.phases import FAILURE_KINDS, MAIN_PROCESS_PHASES, EventKind

hyperscan: Any
try:  # the optional accelerator: `pip install logphase[fast]`
    hyperscan = importlib.import_module("hyperscan")
except ImportError:  # pragma: no cover - exercised where hyperscan is not installed
    hyperscan = None

# Big chunks: the per-chunk Python work is constant, the scan itself is C.
CHUNK_BYTES = 8 << 20
# A factor shorter than this is in nearly every line: no use as a filter.
MIN_FACTOR = 3
# A pack literal this long names the line well; shorter ones (`"POST /`) may be in most lines.
GOOD_LITERAL = 8
# Alternatives multiply across a regex's branches; beyond this the sets stop paying for themselves.
MAX_ALTERNATIVES = 32
# A line shape seen this often in steady lines becomes a template (a recompile of the scanners).
ADOPT_AFTER = 2
MAX_TEMPLATES = 64
WINDOW_BYTES = 1 << 16  # the first window of a candidate scan
SPARSE = 64  # fewer candidates than this in a window: the next window is twice as big
RECOMPILE_EVERY = 256  # emitted lines between two recompiles of the scanners
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
    def __init__(self) -> None:
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
        if top and found and min(map(len, found)) >= MIN_FACTOR:
            self.all_required.append(frozenset(found))
        return found

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
    walker = _FactorWalker()
    walker.sequence(list(parsed))
    if walker.caseless or parsed.state.flags & re.IGNORECASE:
        return []
    return [frozenset(text.encode() for text in found) for found in walker.all_required]


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
    requires: dict[str, list[frozenset[bytes]]] = field(default_factory=dict)  # steady rule → sets
    reason: str = ""

    def could_match(self, rule: Rule, line: bytes) -> bool:
        """False when the line lacks one of the strings the rule's regex needs."""
        return all(any(text in line for text in options) for options in self.requires.get(rule.id, ()))

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
        if rule.in_block:
            continue  # only inside a traceback, and the matcher sees every line of one (`busy`)
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
    trigger_patterns = [re.escape(b).replace(b"\\\r", b"\\r") for b in ALWAYS_BYTES]
    if any(f.caseless for f in candidates):
        trigger_patterns += [re.escape(b) for b in UNICODE_CASE_BYTES]
    markers = {m.encode() for m in (*BLOCK_MARKERS, *FRAME_HEADERS, *CHAINED)}
    trigger_patterns += [re.escape(m) for m in sorted(markers)]
    trigger_patterns += [widen_classes(t.pattern).encode() for t in triggers]
    requires: dict[str, list[frozenset[bytes]]] = {}
    for rule in {id(r): r for r in steady.values()}.values():
        sets = regex_requirements(rule.pattern.pattern)
        if rule.literal is not None and not rule.ignore_case:
            sets.append(frozenset({rule.literal.encode()}))
        requires[rule.id] = sets
    return Plan(
        packs=packs,
        requires=requires,
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
    def matches(self, data: bytes | bytearray, start: int, end: int) -> list[tuple[int, int]]:
        """(pattern id, end offset) of matches in data[start:end]: for each line with a match,
        every pattern that matches in it, at least once."""


class _ReScanner:
    """The pure-Python scanner. A pattern matches where one of its top-level alternatives does,
    so the alternatives are searched, not the patterns: the literal ones in one lookahead search
    over a trie of them (caseless ones over the lowered bytes), the line-anchored ones from each
    newline (`re` then jumps between newlines instead of trying `^` at every byte), the others one
    by one. One alternation of every pattern with a group each would make `re` try every
    alternative at every byte: ~50 s per MB for the shipped packs, against ~0.2 s."""

    def __init__(self, patterns: Sequence[tuple[bytes, bool]]) -> None:
        exact: list[tuple[int, bytes]] = []
        caseless: list[tuple[int, bytes]] = []
        self.anchored: list[tuple[int, re.Pattern[bytes]]] = []  # (pattern id, its part after `^`)
        self.loose: list[tuple[int, re.Pattern[bytes]]] = []
        for index, (pattern, is_caseless) in enumerate(patterns):
            flags = re.MULTILINE | (re.IGNORECASE if is_caseless else 0)
            for part in _split_alternatives(pattern, is_caseless):
                text = _literal_text(part)
                if text is not None:
                    (caseless if is_caseless else exact).append((index, text.lower() if is_caseless else text))
                elif part.startswith(b"^") and not is_caseless:
                    self.anchored.append((index, re.compile(part[1:], flags)))
                else:
                    self.loose.append((index, re.compile(part, flags)))
        self.exact = _LiteralFinder(exact)
        self.caseless = _LiteralFinder(caseless)
        parts = b"|".join(part.pattern for _, part in self.anchored)
        self.line_starts = re.compile(b"\n(?=" + parts + b")", re.MULTILINE) if self.anchored else None

    def matches(self, data: bytes | bytearray, start: int, end: int) -> list[tuple[int, int]]:
        found = self.exact.scan(data, start, end)
        if self.caseless.pattern is not None:
            lowered = bytes(data[start:end]).lower()
            found += [(index, start + stop) for index, stop in self.caseless.scan(lowered, 0, len(lowered))]
        for index, part in self.loose:
            found += [(index, hit.end()) for hit in part.finditer(data, start, end)]
        if self.line_starts is not None:
            lines = [hit.end() for hit in self.line_starts.finditer(data, start, end)]
            for line_start in [start, *lines] if start == 0 or data[start - 1 : start] == b"\n" else lines:
                for index, part in self.anchored:
                    if (hit := part.match(data, line_start, end)) is not None:
                        found.append((index, hit.end()))
        found.sort(key=lambda item: item[1])
        return found


class _LiteralFinder:
    """Every occurrence of a set of literals, in one `re` search: a lookahead at each byte finds
    the longest literal that starts there, and the literals that are its prefixes start there too."""

    def __init__(self, literals: Sequence[tuple[int, bytes]]) -> None:
        self.ids: dict[bytes, list[int]] = {}
        for index, text in literals:
            self.ids.setdefault(text, []).append(index)
        self.prefixes = {text: [t for t in self.ids if text.startswith(t)] for text in self.ids}
        self.pattern = re.compile(b"(?=(" + _trie_regex(self.ids) + b"))") if self.ids else None

    def scan(self, data: bytes | bytearray, start: int, end: int) -> list[tuple[int, int]]:
        """(literal's id, where the occurrence ends) for every occurrence in data[start:end]."""
        if self.pattern is None:
            return []
        found: list[tuple[int, int]] = []
        for hit in self.pattern.finditer(data, start, end):
            for text in self.prefixes[hit.group(1)]:
                found += [(index, hit.start() + len(text)) for index in self.ids[text]]
        return found


def _literal_text(pattern: bytes) -> bytes | None:
    """The bytes an escaped literal pattern (`re.escape(text)`) stands for; None for a regex."""
    text = re.sub(rb"\\(.)", rb"\1", pattern, flags=re.DOTALL)
    return text if text and re.escape(text) == pattern else None


def _split_alternatives(pattern: bytes, caseless: bool) -> list[bytes]:
    """A pattern's top-level alternatives when each compiles alone, else the pattern."""
    parts = _alternatives(pattern)
    try:
        for part in parts:
            re.compile(part, re.IGNORECASE if caseless else 0)
    except re.error:
        return [pattern]
    return parts


def _alternatives(pattern: bytes) -> list[bytes]:
    """A pattern's top-level alternatives: `a|b(c|d)|[|]` → `a`, `b(c|d)`, `[|]`."""
    if re.match(rb"\(\?[aiLmsux]", pattern):
        return [pattern]  # global inline flags belong to every alternative
    parts: list[bytes] = []
    depth, escaped, in_class, begin = 0, False, False, 0
    for index, byte in enumerate(pattern):
        if escaped:
            escaped = False
        elif byte == ord("\\"):
            escaped = True
        elif in_class:
            in_class = byte != ord("]")
        elif byte == ord("["):
            in_class = True
        elif byte == ord("("):
            depth += 1
        elif byte == ord(")"):
            depth -= 1
        elif byte == ord("|") and depth == 0:
            parts.append(pattern[begin:index])
            begin = index + 1
    parts.append(pattern[begin:])
    return parts


def _trie_regex(words: Iterable[bytes]) -> bytes:
    """One regex for a set of literals, their common prefixes shared (`re` then tests a byte
    against one branch per distinct next byte, not every word)."""
    trie: dict[int, Any] = {}
    for word in words:
        node = trie
        for byte in word:
            node = node.setdefault(byte, {})
        node[-1] = {}

    def branch(node: dict[int, Any]) -> bytes:
        alternatives = [re.escape(bytes([byte])) + branch(child) for byte, child in sorted(node.items()) if byte >= 0]
        if not alternatives:
            return b""
        body = alternatives[0] if len(alternatives) == 1 else b"(?:" + b"|".join(alternatives) + b")"
        return b"(?:" + body + b")?" if -1 in node else body  # a word ends here: longer ones are optional

    return branch(trie)


class _HsScanner:
    """Hyperscan: every pattern in one database, scanned once."""

    def __init__(self, patterns: Sequence[tuple[bytes, bool]]) -> None:
        self.db: Any = None
        if not patterns:
            return
        flags = []
        for _, caseless in patterns:
            flag = hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY
            if caseless:
                flag |= hyperscan.HS_FLAG_CASELESS
            flags.append(flag)
        self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self.db.compile(
            expressions=[p for p, _ in patterns], ids=list(range(len(patterns))), elements=len(patterns), flags=flags
        )
        self.scratch = hyperscan.Scratch(self.db)

    def matches(self, data: bytes | bytearray, start: int, end: int) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        if self.db is None or start >= end:
            return found

        def on_match(pattern: int, _start: int, stop: int, _flags: int, _context: object) -> None:
            found.append((pattern, start + stop))

        self.db.scan(memoryview(data)[start:end], match_event_handler=on_match, scratch=self.scratch)
        found.sort(key=lambda item: item[1])
        return found


def make_scanner(patterns: Sequence[tuple[bytes, bool]], *, accelerate: bool = True) -> Scanner:
    """A scanner for (regex, caseless) pairs: hyperscan when installed and asked for."""
    if accelerate and hyperscan is not None:
        try:
            return _HsScanner(patterns)
        except hyperscan.error:  # a pattern hyperscan does not support: the stdlib reads it all
            pass
    return _ReScanner(patterns)


def accelerated() -> bool:
    return hyperscan is not None


# --- templates: the shapes of steady lines -----------------------------------------------------------

DIGIT = -1  # a template atom: any ASCII digit (a timestamp's, a pid's)
# Prefix groups whose digits decide the rank: a template keeps them.
RANK_GROUPS = frozenset({"tags", "rank"})
# The characters a docker-compose service name is made of: a template must hold one that is not,
# or the reader's compose-prefix stripping could change what its lines say.
COMPOSE_NAME = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.[]- \t")


@dataclass(frozen=True)
class Template:
    """A line prefix, byte for byte except its digits outside the rank tags (timestamp, pid,
    thread). Every line that starts with it gets the same prefixes, so the same rank, as the
    line it was learned from. `stamp`: "year"
    (a full date), "date" (no year: vLLM), "none" (no timestamp)."""

    atoms: tuple[int, ...]
    rank: str | None
    stamp: str

    def regex(self) -> bytes:
        return b"".join(b"[0-9]" if atom == DIGIT else re.escape(bytes([atom])) for atom in self.atoms)


def learn_template(packs: PackSet, raw: bytes, text: str) -> Template | None:
    """The template of a line, or None when its prefix cannot be trusted to decide the parse."""
    if text.encode() != raw:
        return None  # the reader changed it (colour codes, a container prefix): the bytes mislead
    fields, message = packs.split_prefix(text)
    length = len(text) - len(message)
    region = text[:length]
    if not length or not region.isascii() or "|" in region or not set(region.encode()) - COMPOSE_NAME:
        return None
    if fields.time is not None and not fields.time_has_date:
        return None  # time-of-day stamps need every line for their midnight rollover
    by_id = {prefix.id: prefix for prefix in packs.prefixes}
    kept: set[int] = set()  # the digits that name the rank stay as they are
    position = 0
    for prefix_id in fields.prefixes:
        found = by_id[prefix_id].pattern.match(text[position:])
        if found is None:
            return None
        for group in RANK_GROUPS & set(found.re.groupindex):
            if found.start(group) >= 0:
                start, end = found.span(group)
                kept |= set(range(position + start, position + end))
        position += found.end()
    if position != length:
        return None
    # timestamps, pids and thread ids vary from line to line; one template stands for them all
    digits = {index for index, char in enumerate(region) if char.isdigit() and index not in kept}
    atoms = tuple(DIGIT if index in digits else byte for index, byte in enumerate(region.encode()))
    # the prefix must parse the same whatever the digits of its timestamp are
    for digit in "09":
        variant = "".join(digit if index in digits else char for index, char in enumerate(region)) + message
        other, rest = packs.split_prefix(variant)
        if other.prefixes != fields.prefixes or rest != message or other.rank != fields.rank:
            return None
    stamp = "none" if fields.time is None else ("year" if fields.time_has_year else "date")
    return Template(atoms, fields.rank, stamp)


class _Trie:
    """Templates as a trie, to write the regex of "a line that starts with none of them"."""

    def __init__(self) -> None:
        self.children: dict[int, _Trie] = {}
        self.leaf = False

    def add(self, atoms: tuple[int, ...]) -> bool:
        node = self
        for atom in atoms:
            kids = node.children
            if (atom == DIGIT and any(48 <= k <= 57 for k in kids)) or (48 <= atom <= 57 and DIGIT in kids):
                return False  # a digit class beside a literal digit: no simple complement
            node = kids.setdefault(atom, _Trie())
        node.leaf = True
        return True

    def complement(self, *, ends: bool) -> bytes | None:
        """A regex for the text after `^` of any line this node's templates do not start
        (`ends`: also a line that ends before a template does)."""
        if self.leaf:
            return None
        excluded = b"".join(b"0-9" if atom == DIGIT else _class_byte(atom) for atom in self.children)
        options = [b"[^" + excluded + b"\\n]"] + ([b"$"] if ends else [])
        for atom, child in self.children.items():
            rest = child.complement(ends=ends)
            if rest is not None:
                options.append((b"[0-9]" if atom == DIGIT else re.escape(bytes([atom]))) + rest)
        return b"(?:" + b"|".join(options) + b")"


@dataclass
class _TemplateSet:
    """The line templates learned from the lines the matcher read: one is adopted once seen
    ADOPT_AFTER times, while fewer than MAX_TEMPLATES are known, and unless it and a known one
    are prefixes of each other (a line could not tell which it is on)."""

    known: list[Template] = field(default_factory=list)
    sightings: Counter[Template] = field(default_factory=Counter)

    def sight(self, template: Template) -> bool:
        """Count one sighting; True when it adopts the template."""
        if template in self.known:
            return False
        self.sightings[template] += 1
        if self.sightings[template] < ADOPT_AFTER or len(self.known) >= MAX_TEMPLATES:
            return False
        trie = _Trie()
        if not all(trie.add(t.atoms) for t in [*self.known, template]):
            return False
        self.known.append(template)
        return True

    def regex(self) -> re.Pattern[bytes]:
        """Matches a line's start on a known template; its `lastindex` - 1 is the template's index."""
        return re.compile(b"|".join(b"(" + t.regex() + b")" for t in self.known))


def _class_byte(byte: int) -> bytes:
    return b"\\" + bytes([byte]) if bytes([byte]) in b"\\]^-[" else bytes([byte])


# --- the scan of one source --------------------------------------------------------------------------


@dataclass
class _Group:
    """The events of one steady rule on one rank since the matcher last saw one: `stage` 0 none
    yet, 1 one seen, 2 two seen with nothing in between that could change what the next does."""

    rule: Rule
    rank: str | None
    stage: int = 0
    member: int = -1  # offset of the last member the matcher saw, in this chunk
    carried: tuple[int, bytes] | None = None  # the last member of the previous chunk: (number, bytes)
    held: Line | None = None  # FollowRuns: the latest member the matcher has not read yet


Runs = dict[tuple[str, str | None], _Group]  # (steady rule id, rank) → its run


def book_runs(runs: Runs, steady: Container[str], event: Event) -> _Group | None:
    """Advance the runs as the matcher reads one event; the run a steady event belongs to. A run
    is stable (stage 2) after two events with nothing between that could change what the next
    does: a new phase on the rank, or a bar without a rank (it goes to the lowest rank)."""
    rule = event.rule
    if rule.id in steady:
        key = (rule.id, event.rank)
        group = runs.get(key)
        if group is None or group.stage == 0:
            _reset_rank(runs, event.rank, keep=key)
            group = runs[key] = _Group(rule, event.rank, stage=1)
        else:
            group.stage = 2
        return group
    if event.phase is not None and event.kind not in FAILURE_KINDS:
        if event.kind is EventKind.PROGRESS and event.rank is None and event.phase not in MAIN_PROCESS_PHASES:
            for group in runs.values():
                group.stage = 0
        else:
            _reset_rank(runs, event.rank, keep=None)
    return None


def _reset_rank(runs: Runs, rank: str | None, keep: tuple[str, str | None] | None) -> None:
    """An event that may move a rank's phase past the CUDA graphs changes where its next
    dist_init / weight_load / kv_cache / cuda_graph marks go (the draft's spans)."""
    for key, group in runs.items():
        if key != keep and group.rank == rank and group.rule.phase in DRAFT_REPEATED:
            group.stage = 0


@dataclass
class _Kind:
    """Lines of one template that hold one steady factor."""

    template: Template
    factor: bytes
    rule: Rule
    pattern: re.Pattern[bytes]


@dataclass
class ScanStats:
    """What the fast path did, for benchmarks and tests."""

    lines: int = 0
    emitted: int = 0
    probed: int = 0
    skipped_events: int = 0
    recompiles: int = 0
    plain_lines: int = 0
    skipped_systems: Counter[str] = field(default_factory=Counter)


class OpenDumps(Protocol):
    """The dump parser, as far as the fast path asks: how many dumps are open."""

    open: int


# What the reader turns into "the file ends early or is damaged" (logs/reader.py read_lines).
READ_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    OSError,
    zlib.error,
    lzma.LZMAError,
    zstandard.ZstdError,
    tarfile.TarError,
)


class FastLines:
    """The lines of one source the matcher needs, in order: candidate lines (a rule's literal, a
    dump's trigger), the lines around them (context, the timestamp they inherit), the first two and
    the last line of each steady run, and everything while a traceback or dump is open (`busy`).

    A template line with no candidate factor produces no event and changes nothing the matcher
    keeps but its time, which is handed over by the nearest stamped line before the next line
    the matcher sees. Steady events (serving batches, access lines, NCCL chatter) between the
    second and the last of a run only repeat what the last says; they are counted, not read."""

    def __init__(
        self,
        source: LogSource,
        plan: Plan,
        reference: datetime,
        *,
        plain_head: int = 0,
        accelerate: bool = True,
    ) -> None:
        self.source = source
        self.plan = plan
        self.packs = plan.packs
        self.reference = reference
        self.matcher: SourceMatcher | None = None
        self.dumps: OpenDumps | None = None
        self.plain_head = plain_head
        self.accelerate = accelerate
        self.stats = ScanStats()
        self.learned = _TemplateSet()
        self.templates = self.learned.known
        self.kinds: list[_Kind] = []
        self.registered: set[tuple[Template, bytes]] = set()
        self.groups: Runs = {}
        self.steady_rules = {rule.id: rule for rule in plan.steady.values()}
        self.factors_of: dict[str, list[bytes]] = {}
        for factor, rule in plan.steady.items():
            self.factors_of.setdefault(rule.id, []).append(factor)
        self.steady_bytes = [f for f in plan.steady]
        self.after = 0  # context lines still owed after the last emission
        self.carried_stamps: list[tuple[int, bytes, str]] = []  # stamped lines after the last emission
        self.dirty = False
        self.failure: BaseException | None = None
        self.compiled_at = 0
        self.candidates_ready = False
        self.probe_cache: dict[tuple[int, int], tuple[Event, ...]] = {}
        self.loose_factors: list[list[bytes]] = []
        self.plain_patterns = 0
        self.template_re: re.Pattern[bytes] | None = None
        self.candidates: Scanner = _ReScanner([])

    def attach(self, matcher: SourceMatcher, dumps: OpenDumps | None = None) -> None:
        """The matcher (and dump parser) that read these lines: what they hold decides what the
        next line must be (a copy of the matcher's state predicts its events)."""
        self.matcher, self.dumps = matcher, dumps

    def live(self) -> SourceMatcher | None:
        return self.matcher

    def busy(self) -> bool:
        """A traceback or a dump is open: the matcher must see every line until it closes."""
        matcher = self.matcher
        return matcher is not None and (matcher.block is not None or (self.dumps is not None and self.dumps.open > 0))

    # -- scanners

    def _refresh(self) -> None:
        """Recompile the scanners for new templates and kinds, but not after every one: scanners
        that lag only send more lines to the matcher (each compile costs ~50 ms)."""
        if self.dirty and (self.stats.emitted - self.compiled_at >= RECOMPILE_EVERY or not self.candidates_ready):
            self._compile()
            self.targets_from = -1

    def _compile(self) -> None:
        """One database: candidate literals, triggers, lines that start with no template, and
        lines with a steady factor whose template has not shown that factor's run yet."""
        self.stats.recompiles += 1
        self.dirty = False
        self.compiled_at = self.stats.emitted
        self.candidates_ready = bool(self.templates)
        patterns: list[tuple[bytes, bool]] = [(re.escape(f.text), f.caseless) for f in self.plan.candidates]
        patterns += [(trigger, False) for trigger in self.plan.triggers]
        self.template_re = None
        if self.templates:
            trie = _Trie()
            for template in self.templates:
                trie.add(template.atoms)
            rest = trie.complement(ends=True)
            if rest is not None:
                patterns.append((b"^" + rest, False))
            self.template_re = self.learned.regex()
        self.plain_patterns = len(patterns)
        self.loose_factors = []
        if self.templates:
            by_set: dict[frozenset[Template], list[bytes]] = {}
            for factor in self.plan.steady:
                hosts = frozenset(t for t in self.templates if (t, factor) in self.registered)
                if not hosts:
                    patterns.append((re.escape(factor), False))  # every line with it: checked here
                    self.loose_factors.append([factor])
                else:
                    by_set.setdefault(hosts, []).append(factor)
            for hosts, factors in by_set.items():
                trie = _Trie()
                for template in hosts:
                    trie.add(template.atoms)
                rest = trie.complement(ends=False)
                if rest is None:
                    continue
                alternatives = b"(?:" + b"|".join(re.escape(f) for f in factors) + b")"
                # a line that leaves the templates at byte p and holds the factor after p; or one
                # that holds it from a byte before the longest template ends (it may start at p)
                early = max(len(t.atoms) for t in hosts) - 1
                patterns.append((b"^" + rest + b"[^\\n]*" + alternatives, False))
                patterns.append((b"^[^\\n]{0,%d}" % early + alternatives, False))
                self.loose_factors += [factors, factors]
        self.candidates = make_scanner(patterns, accelerate=self.accelerate)

    def _register(self, template: Template, rule: Rule, raw: bytes) -> bool:
        """Runs of this rule on this template, found by the factors this line holds (the others
        stay candidates until a line shows them: a search for an absent factor costs a full scan)."""
        changed = False
        for factor in self.factors_of.get(rule.id, ()):
            if factor in raw and (template, factor) not in self.registered:
                self.registered.add((template, factor))
                self.kinds.append(_Kind(template, factor, rule, re.compile(template.regex())))
                changed = True
        return changed

    # -- reading

    def __iter__(self) -> Iterator[Line]:
        try:
            stream = self.source.open_stream()
        except OSError as exc:
            raise InputError(
                f"{self.source.name}: cannot open: {exc}", hint="check the file and its permissions"
            ) from None
        try:
            yield from self._chunks(stream)
        except READ_ERRORS as exc:
            raise InputError(
                f"{self.source.name}: the file ends early or is damaged after line {self.source.lines}: {exc}",
                hint="the file is truncated or corrupt: copy it again, or save what is left "
                "(zcat FILE > part.log) and analyze that",
            ) from None
        finally:
            stream.close()

    def _chunks(self, stream: IO[bytes]) -> Iterator[Line]:
        read = getattr(stream, "read1", stream.read)
        pending = b""
        base = 0
        upcoming = self._read(read)
        while upcoming:
            data = pending + upcoming
            upcoming = self._read(read) if self.failure is None else b""
            cut = data.rfind(b"\n") + 1
            final = not upcoming and self.failure is None
            if final:
                cut = len(data)
            elif cut == 0:
                pending = self._long_line(data)
                continue
            yield from self._chunk(data, cut, base, final=final)
            pending = data[cut:]
            base = self.stats.lines
        self.source.lines = self.stats.lines
        if self.failure is not None:
            raise self.failure  # after the whole lines read before it, as the reader does
        if pending:
            yield from self._chunk(pending, len(pending), base, final=True)
        self.source.lines = self.stats.lines

    def _read(self, read: Callable[[int], bytes]) -> bytes:
        """Up to CHUNK_BYTES, in the reader's own read sizes: a damaged archive then fails after
        the same bytes, and the error names the same line."""
        parts: list[bytes] = []
        size = 0
        while size < CHUNK_BYTES:
            try:
                part = read(READ_BYTES)
            except READ_ERRORS as exc:
                self.failure = exc
                break
            if not part:
                break
            parts.append(part)
            size += len(part)
            self.source.bytes += len(part)
        return b"".join(parts)

    @staticmethod
    def _long_line(data: bytes) -> bytes:
        """A line longer than a chunk: only its first MAX_LINE_BYTES matter (the reader's rule)."""
        return data[: MAX_LINE_BYTES + 1]

    # -- one chunk: whole lines, `base` lines before it

    def _chunk(self, buf: bytes, end: int, base: int, *, final: bool) -> Iterator[Line]:
        """The whole lines of buf[:end] (what follows is the next chunk's first line)."""
        self.buf = buf
        self.end = end
        self.base = base
        self.pos = 0
        self._number_cache = (0, base + 1)
        self.targets: list[int] = []
        self.target_index = 0
        self.targets_from = -1
        self.targets_to = 0
        self.window = WINDOW_BYTES
        self.kind_next: dict[int, tuple[int, int | None, int]] = {}
        for group in self.groups.values():
            group.member = -1
        emitted_before = self.stats.emitted
        last_start = buf.rfind(b"\n", 0, end - 1) + 1 if end else 0
        while self.pos < end:
            if self._plain():
                yield from self._emit_line(self.pos)
                continue
            target = self._next_target()
            if final and (target is None or target > last_start) and self.pos <= last_start:
                target = last_start  # the last line: the report quotes it, with its time
            limit = end if target is None else target
            first = self._next_unstable(limit)
            if first is not None:
                yield from self._emit_with_context(first)
            elif target is not None:
                yield from self._emit_with_context(target)
            else:
                break
        self._carry(end)
        known, number = self._number_cache
        lines = number - 1 - base + buf.count(b"\n", known, end) + (0 if buf[end - 1 : end] == b"\n" else 1)
        self._count_skipped(lines - (self.stats.emitted - emitted_before))
        self.stats.lines = base + lines

    def _plain(self) -> bool:
        """Every line goes to the matcher: the head (read for the log's year), while a traceback
        or dump is open, while owed context lines, or before any template is known."""
        if self.after > 0:
            return True
        if self._number(self.pos) <= self.plain_head or not self.templates:
            return True
        if self.busy():
            for group in self.groups.values():
                group.stage = 0
            return True
        return False

    def _number(self, offset: int) -> int:
        """The line number of the line that starts at `offset` (newlines counted in C)."""
        known, number = self._number_cache
        if offset >= known:
            number += self.buf.count(b"\n", known, offset)
        else:
            number -= self.buf.count(b"\n", offset, known)
        self._number_cache = (offset, number)
        return number

    def _line_end(self, offset: int) -> int:
        end = self.buf.find(b"\n", offset)
        return self.end if end < 0 or end > self.end else end

    def _line_start(self, offset: int) -> int:
        return self.buf.rfind(b"\n", 0, offset) + 1

    def _previous(self, offset: int) -> int:
        """The start of the line before the one at `offset`."""
        return self.buf.rfind(b"\n", 0, max(0, offset - 1)) + 1

    # -- candidates

    def _next_target(self) -> int | None:
        self._refresh()
        if self.targets_from < 0 or self.targets_from > self.pos:
            self._find_targets(self.pos)
        while True:
            while self.target_index < len(self.targets) and self.targets[self.target_index] < self.pos:
                self.target_index += 1
            if self.target_index < len(self.targets):
                return self.targets[self.target_index]
            if self.targets_to >= self.end:
                return None
            self._find_targets(max(self.pos, self.targets_to))

    def _find_targets(self, start: int) -> None:
        """Candidates in a window from `start`: small while they are dense (the matcher reads most
        lines anyway), doubling while they are sparse, so a scan never runs far ahead for nothing."""
        end = self.end
        if start + self.window < end:
            end = self.buf.find(b"\n", start + self.window) + 1 or end
        self._scan_targets(start, end)
        self.window = min(self.window * 2, CHUNK_BYTES) if len(self.targets) < SPARSE else WINDOW_BYTES
        self.targets_from, self.targets_to = start, end

    def _scan_targets(self, start: int, end: int) -> None:
        starts: set[int] = set()
        loose: dict[int, list[bytes]] = {}
        for index, stop in self.candidates.matches(self.buf, start, end):
            line_start = self._line_start(stop)
            if index < self.plain_patterns:
                starts.add(line_start)
            else:
                loose.setdefault(line_start, []).extend(self.loose_factors[index - self.plain_patterns])
        for line_start, factors in loose.items():
            if line_start in starts:
                continue
            template = self._template_at(line_start)
            line = self.buf[line_start : self._line_end(line_start)]
            if template is None or any(
                (template, f) not in self.registered and f in line and self.plan.could_match(self.plan.steady[f], line)
                for f in factors
            ):
                starts.add(line_start)
        self.targets = sorted(s for s in starts if s >= start)
        self.target_index = 0

    # -- steady runs

    def _template_at(self, offset: int) -> Template | None:
        if self.template_re is None:
            return None
        found = self.template_re.match(self.buf, offset)
        if found is None or found.lastindex is None:
            return None
        return self.templates[found.lastindex - 1]

    def _next_unstable(self, limit: int) -> int | None:
        """The first line before `limit` that starts or restarts a steady run: its group has no
        two events the matcher saw since the last change."""
        best: int | None = None
        need = [
            index
            for index, kind in enumerate(self.kinds)
            if self.groups.get((kind.rule.id, kind.template.rank), _Group(kind.rule, None)).stage < 2
        ]
        if not need:
            return None
        for index in need:
            found = self._next_member(index, limit if best is None else min(best, limit))
            if found is not None and (best is None or found < best):
                best = found
        return best

    def _next_member(self, index: int, limit: int) -> int | None:
        """The first line from `pos` on, before `limit`, that is an event of this kind's group."""
        kind = self.kinds[index]
        cached = self.kind_next.get(index)
        if cached is not None and cached[0] <= self.pos and (cached[1] is None or cached[1] >= self.pos):
            found: int | None = cached[1]
            if cached[1] is None and cached[2] < limit:
                found = self._walk_members(index, kind, cached[2], limit)
        else:
            found = self._walk_members(index, kind, self.pos, limit)
        return found if found is not None and found < limit else None

    def _walk_members(self, index: int, kind: _Kind, start: int, limit: int) -> int | None:
        origin = self.pos
        while start < limit:
            found = self.presence_of(index, start, limit)
            if found is None:
                break
            if self._is_member(kind, found):
                self.kind_next[index] = (origin, found, found)
                return found
            start = self._line_end(found) + 1
        self.kind_next[index] = (origin, None, max(start, limit))
        return None

    def presence_of(self, index: int, start: int, limit: int) -> int | None:
        """The first line in [start, limit) of this kind's template that holds its factor."""
        kind = self.kinds[index]
        offset = self.buf.find(kind.factor, start, limit)
        while offset >= 0:
            line = self._line_start(offset)
            if (
                line >= start
                and kind.pattern.match(self.buf, line)
                and self.plan.could_match(kind.rule, self.buf[line : self._line_end(line)])
            ):
                return line
            offset = self.buf.find(kind.factor, self._line_end(offset) + 1, limit)
        return None

    def _is_member(self, kind: _Kind, offset: int) -> bool:
        events = self._probe_at(offset)
        return any(e.rule.id == kind.rule.id and e.rank == kind.template.rank for e in events)

    def _unseen_lasts(self, limit: int) -> Iterator[tuple[_Group, int | None]]:
        """Each stable run, with its last member before `limit` the matcher has not seen."""
        for group in self.groups.values():
            if group.stage == 2:
                yield group, self._last_member(group, max(self.pos, group.member + 1), limit)

    def _last_member(self, group: _Group, low: int, high: int) -> int | None:
        """The last line in [low, high) that is an event of this group."""
        best: int | None = None
        for kind in self.kinds:
            if kind.rule.id != group.rule.id or kind.template.rank != group.rank:
                continue
            offset = self.buf.rfind(kind.factor, low, high)
            while offset >= 0 and (best is None or offset > best):
                line = self._line_start(offset)
                if line < low:
                    break
                if (
                    kind.pattern.match(self.buf, line)
                    and self.plan.could_match(kind.rule, self.buf[line : self._line_end(line)])
                    and self._is_member(kind, line)
                ):
                    best = line if best is None or line > best else best
                    break
                offset = self.buf.rfind(kind.factor, low, max(low, line))
        return best

    # -- emitting

    def _emit_with_context(self, offset: int) -> Iterator[Line]:
        """Emit a line with what the matcher must see first: each steady run's last line since
        the matcher's last look, the two lines before (context), the nearest timestamp."""
        wanted: set[int] = {offset}
        carried: list[tuple[int, bytes]] = []
        for group, last in self._unseen_lasts(offset):
            if last is not None:
                wanted.add(last)
            elif group.carried is not None:
                carried.append(group.carried)
            group.carried = None
        line = offset
        for _ in range(CONTEXT_BEFORE):
            if line <= self.pos:
                break
            line = self._previous(line)
            wanted.add(line)
        stamps, old = self._time_lines(sorted(wanted))
        wanted |= stamps
        carried += old
        for number, raw in sorted(set(carried)):
            yield from self._emit_raw(raw, number)
        self.carried_stamps = []
        for line_start in sorted(wanted):
            if line_start >= self.pos:
                yield from self._emit_line(line_start)
        self.after = CONTEXT_AFTER

    def _time_lines(self, wanted: list[int]) -> tuple[set[int], list[tuple[int, bytes]]]:
        """For each line the matcher will see without a full date of its own, the nearest stamped
        line before it that it would have seen (and, for a year-less stamp, the nearest line with
        a year): the time the line inherits. Lines of this chunk as offsets; lines of an earlier
        chunk as (number, bytes)."""
        found: set[int] = set()
        old: list[tuple[int, bytes]] = []
        low = self.pos
        for index, line in enumerate(wanted):
            template = self._template_at(line)
            if template is None or template.stamp != "year":
                need = "any"
                walk = line
                while walk > low and need:
                    walk = self._previous(walk)
                    template = self._template_at(walk)
                    if template is None or template.stamp == "none" or (need == "year" and template.stamp != "year"):
                        continue
                    found.add(walk)
                    need = "year" if template.stamp == "date" and need == "any" else ""
                if need and index == 0 and low == self.pos:
                    for number, raw, stamp in reversed(self.carried_stamps):
                        if need == "any" or stamp == "year":
                            old.append((number, raw))
                            need = "year" if stamp == "date" and need == "any" else ""
                            if not need:
                                break
            low = line
        return found, old

    def _emit_raw(self, raw: bytes, number: int) -> Iterator[Line]:
        lines = list(clean_line(raw, number, self.source._index))
        self._book(self._probe(lines), None)
        self.stats.emitted += 1
        yield from lines

    def _emit_line(self, offset: int) -> Iterator[Line]:
        end = self._line_end(offset)
        raw = self.buf[offset:end]
        if len(raw) > MAX_LINE_BYTES:
            raw = raw[:MAX_LINE_BYTES]
            self.source.truncated_lines += 1
        number = self._number(offset)
        lines = list(clean_line(raw, number, self.source._index))
        if self.after > 0:
            self.after -= 1
        if self._plain_now(offset):
            self.stats.plain_lines += 1
            events = self._probe(lines) if any(f in raw for f in self.steady_bytes) else ()
        else:
            events = self._probe_at(offset, lines)
        self._book(events, (offset, raw, lines))
        self.stats.emitted += 1
        self.pos = end + 1
        self.carried_stamps = []
        self.source.lines = number
        yield from lines

    def _plain_now(self, offset: int) -> bool:
        return not self.templates or self._number(offset) <= self.plain_head

    # -- what a line is

    def _probe_at(self, offset: int, lines: list[Line] | None = None) -> tuple[Event, ...]:
        """The events of the line at `offset` (remembered: walks ask about a line more than once)."""
        cache = self.probe_cache
        key = (self.base, offset)
        if key in cache:
            return cache[key]
        if lines is None:
            raw = self.buf[offset : self._line_end(offset)][:MAX_LINE_BYTES]
            lines = list(clean_line(raw, self._number(offset), self.source._index))
        events = self._probe(lines)
        if len(cache) > 4096:
            cache.clear()
        cache[key] = events
        return events

    def _probe(self, lines: Iterable[Line]) -> tuple[Event, ...]:
        """What the matcher will make of these lines, from a copy of its state now."""
        self.stats.probed += 1
        live = self.live()
        probe = SourceMatcher(
            self.packs,
            self.reference,
            year=live.year if live else None,
            last_time=live.last_time if live else None,
            day=live.day if live else None,
            systems=Counter(live.systems) if live else Counter(),
        )
        return tuple(event for line in lines for event in probe.match_line(line))

    def _book(self, events: tuple[Event, ...], where: tuple[int, bytes, list[Line]] | None) -> None:
        """Keep the runs' state as the matcher sees this line's events; learn templates."""
        for event in events:
            group = book_runs(self.groups, self.steady_rules, event)
            if group is not None and where is not None:
                group.member = where[0]
                self._learn(where, event.rule)

    def _learn(self, where: tuple[int, bytes, list[Line]], rule: Rule) -> None:
        _, raw, lines = where
        if len(lines) != 1:
            return
        template = learn_template(self.packs, raw, lines[0].text)
        if template is None:
            return
        changed = self.learned.sight(template)
        if template in self.templates:
            changed = self._register(template, rule, raw) or changed
        if changed:
            self.dirty = True
            self.kind_next.clear()

    def _count_skipped(self, lines: int) -> None:
        """Events of runs the matcher never saw: a chunk's unread lines, shared among the runs in
        progress (approximate: only the system vote and the event count read them)."""
        systems = [g.rule.system for g in self.groups.values() if g.stage == 2 and g.rule.system]
        if lines <= 0 or not systems:
            return
        self.stats.skipped_events += lines
        live = self.live()
        for system, share in Counter(systems).items():
            counted = lines * share // len(systems)
            self.stats.skipped_systems[system] += counted
            if live is not None:
                live.systems[system] += counted  # the rule choice follows the log's system

    def _carry(self, end: int) -> None:
        """At a chunk's end: each run's last line and the last stamped lines the matcher has not
        seen, for the next chunk to hand over."""
        for group, last in self._unseen_lasts(end):
            if last is not None:
                group.carried = (self._number(last), self.buf[last : self._line_end(last)][:MAX_LINE_BYTES])
        stamps: list[tuple[int, bytes, str]] = []
        line = end
        while line > self.pos and len(stamps) < 1 + 1:
            line = self._previous(line)
            template = self._template_at(line)
            if template is None or template.stamp == "none":
                continue
            if not stamps or template.stamp == "year":
                stamps.insert(0, (self._number(line), self.buf[line : self._line_end(line)], template.stamp))
                if template.stamp == "year":
                    break
        if stamps:
            older = [s for s in self.carried_stamps if s[2] == "year"]
            self.carried_stamps = (older[-1:] if stamps[0][2] != "year" else []) + stamps


# --- a followed log (watch): the same summary, line by line ------------------------------------------


class FollowRuns:
    """What FastLines does for a file, for lines that arrive a batch at a time (`logphase watch`):
    once the matcher has seen two lines of a steady run (a serving batch, an access line, NCCL
    chatter on one template), later members are held back, each replacing the one before, and
    handed to the matcher only when a line of another kind comes or the batch ends. The matcher
    then ends in the state it would reach reading every line; the lines skipped are counted for
    the system vote, as FastLines does. One difference from FastLines: a member is known by its
    template and factors, not probed, so if the latest one held turned out to be no event of its
    run (its rule's regex needs more than the factors say), the run's last mark is the one before
    the lines skipped. No shipped rule and no test log shows it (tests/watch/test_follow_runs.py)."""

    def __init__(self, plan: Plan, *, accelerate: bool = True) -> None:
        self.plan = plan
        self.packs = plan.packs
        patterns = [(re.escape(f.text), f.caseless) for f in plan.candidates]
        patterns += [(trigger, False) for trigger in plan.triggers]
        self.candidates = make_scanner(patterns, accelerate=accelerate)
        self.steady_factors = list(plan.steady)
        self.rule_of = {factor: rule.id for factor, rule in plan.steady.items()}
        self.steady_scanner = make_scanner([(re.escape(f), False) for f in self.steady_factors], accelerate=accelerate)
        self.learned = _TemplateSet()
        self.templates = self.learned.known
        self.template_re: re.Pattern[bytes] | None = None
        self.registered: list[set[bytes]] = []  # the steady factors registered on each template
        self.runs: Runs = {}
        self.factors_of: dict[str, list[bytes]] = {}
        for factor, rule in plan.steady.items():
            self.factors_of.setdefault(rule.id, []).append(factor)
        self.skipped_events = 0  # since the last `take_skipped`
        self.skipped_systems: Counter[str] = Counter()

    def take_skipped(self) -> tuple[int, Counter[str]]:
        """Events and system votes of the lines skipped since the last call (for the timeline)."""
        taken = (self.skipped_events, self.skipped_systems)
        self.skipped_events, self.skipped_systems = 0, Counter()
        return taken

    def lines(self, batch: Sequence[Line], matcher: SourceMatcher) -> Iterator[Line]:
        """The lines of `batch` the matcher must read, in order, with the held ones due before
        them; then every line still held (the batch is over: the state must be current)."""
        raws = [line.text.encode("utf-8", "surrogateescape") for line in batch]
        marked, factors = self._scan(raws) if self.templates else (set(), {})
        for index, line in enumerate(batch):
            run = None
            if index in factors and index not in marked and matcher.block is None:
                run = self._run_of(raws[index], factors[index])
            if run is not None and run.stage >= 2:
                if run.held is not None:
                    self._skip(run.rule, matcher)
                run.held = line
                continue
            yield from self._release()
            yield line
        yield from self._release()

    def book(self, line: Line, events: Sequence[Event]) -> None:
        """Keep the runs' state as the matcher reads this line's events (as FastLines does)."""
        for event in events:
            run = book_runs(self.runs, self.factors_of, event)
            if run is not None and len(events) == 1:
                self._learn(line, event.rule)

    def _scan(self, raws: list[bytes]) -> tuple[set[int], dict[int, set[bytes]]]:
        """One pass over the batch: the lines with a rule's literal or a trigger (the matcher
        reads them), and the steady factors each line holds."""
        data = b"\n".join(raws)
        starts = list(itertools.accumulate((len(raw) + 1 for raw in raws[:-1]), initial=0))

        def line_of(stop: int) -> int:
            return bisect.bisect_right(starts, stop - 1) - 1

        marked = {line_of(stop) for _, stop in self.candidates.matches(data, 0, len(data))}
        factors: dict[int, set[bytes]] = {}
        for pattern, stop in self.steady_scanner.matches(data, 0, len(data)):
            factors.setdefault(line_of(stop), set()).add(self.steady_factors[pattern])
        return marked, factors

    def _run_of(self, raw: bytes, factors: set[bytes]) -> _Group | None:
        """The run this line can only continue: it starts with a known template, and its steady
        factors are all of one rule, one of them registered on that template (else the matcher
        reads it: another rule's events would be lost)."""
        assert self.template_re is not None
        rule_of = self.rule_of
        rules = {rule_of[factor] for factor in factors}
        if len(rules) != 1:
            return None
        found = self.template_re.match(raw)
        if found is None or found.lastindex is None:
            return None
        index = found.lastindex - 1
        if factors.isdisjoint(self.registered[index]):
            return None
        run = self.runs.get((rules.pop(), self.templates[index].rank))
        if run is None or not self.plan.could_match(run.rule, raw):
            return None
        return run

    def _release(self) -> Iterator[Line]:
        held = sorted((run.held for run in self.runs.values() if run.held is not None), key=lambda line: line.number)
        for run in self.runs.values():
            run.held = None
        yield from held

    def _skip(self, rule: Rule, matcher: SourceMatcher) -> None:
        self.skipped_events += 1
        if rule.system:
            self.skipped_systems[rule.system] += 1
            matcher.systems[rule.system] += 1  # the rule choice follows the log's system

    def _learn(self, line: Line, rule: Rule) -> None:
        raw = line.text.encode("utf-8", "surrogateescape")
        known = self.template_re.match(raw) if self.template_re is not None else None
        if known is not None and known.lastindex is not None:
            registered = self.registered[known.lastindex - 1]
            if all(f in registered for f in self.factors_of[rule.id] if f in raw):
                return  # nothing new to learn (learning costs a prefix parse per line)
        template = learn_template(self.packs, raw, line.text)
        if template is None:
            return
        if self.learned.sight(template):
            self.registered.append(set())
            self.template_re = self.learned.regex()
        if template not in self.templates:
            return
        self.registered[self.templates.index(template)].update(f for f in self.factors_of[rule.id] if f in raw)
