"""Byte scanners over a chunk of log: hyperscan when installed, a pure-Python one otherwise."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from logphase.logs.fast.cache import ScannerCache

hyperscan: Any
try:  # a default dependency where it has wheels (pyproject.toml); elsewhere the pure-Python scanner
    hyperscan = importlib.import_module("hyperscan")
except ImportError:  # pragma: no cover - exercised where hyperscan is not installed
    hyperscan = None


HS_MAX_PATTERN = 15000  # hyperscan refuses an expression of 16000 bytes or more


class Scanner(Protocol):
    def matches(self, data: bytes | bytearray, start: int, end: int) -> list[tuple[int, int]]:
        """(pattern id, end offset) of matches in data[start:end]: for each line with a match,
        every pattern that matches in it, at least once."""


class ReScanner:
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
        self.pattern = re.compile(b"(?=(" + trie_regex(self.ids) + b"))") if self.ids else None

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


def split_long(pattern: bytes, limit: int) -> list[bytes]:
    """A pattern as patterns of at most `limit` bytes whose matches are its matches (where it can be
    cut): its first group of alternatives is distributed, `^a(?:b|c)d` → `^abd`, `^acd`, again in
    each piece while it is too long. The learned templates' complements outgrow hyperscan's limit on
    a pattern's length (a CRI log's trimmed fractions multiply its templates)."""
    if len(pattern) <= limit:
        return [pattern]
    group = _first_group(pattern)
    if group is None:
        return [pattern]  # hyperscan refuses it: the caller's fallback reads the log
    start, end = group
    pieces = []
    for alternative in _alternatives(pattern[start + 3 : end]):
        pieces += split_long(pattern[:start] + alternative + pattern[end + 1 :], limit)
    return pieces


def _first_group(pattern: bytes) -> tuple[int, int] | None:
    """Where the first `(?:…)` at the top level starts and where its `)` is, when the top level has no
    `|` before it and no quantifier follows it (else: None)."""
    depth, start = 0, -1
    for index, byte in _syntax(pattern):
        if byte == ord("("):
            if depth == 0:
                if pattern[index : index + 3] != b"(?:":
                    return None
                start = index
            depth += 1
        elif byte == ord(")"):
            depth -= 1
            if depth == 0:
                after = pattern[index + 1 : index + 2]
                return (start, index) if after not in (b"?", b"*", b"+", b"{") else None
        elif byte == ord("|") and depth == 0:
            return None
    return None


def _alternatives(pattern: bytes) -> list[bytes]:
    """A pattern's top-level alternatives: `a|b(c|d)|[|]` → `a`, `b(c|d)`, `[|]`."""
    if re.match(rb"\(\?[aiLmsux]", pattern):
        return [pattern]  # global inline flags belong to every alternative
    parts: list[bytes] = []
    depth, begin = 0, 0
    for index, byte in _syntax(pattern):
        if byte == ord("("):
            depth += 1
        elif byte == ord(")"):
            depth -= 1
        elif byte == ord("|") and depth == 0:
            parts.append(pattern[begin:index])
            begin = index + 1
    parts.append(pattern[begin:])
    return parts


def _syntax(pattern: bytes) -> Iterator[tuple[int, int]]:
    """The bytes of a pattern outside escapes and character classes, with where they are."""
    escaped, in_class = False, False
    for index, byte in enumerate(pattern):
        if escaped:
            escaped = False
        elif byte == ord("\\"):
            escaped = True
        elif in_class:
            in_class = byte != ord("]")
        elif byte == ord("["):
            in_class = True
        else:
            yield index, byte


def trie_regex(words: Iterable[bytes]) -> bytes:
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


class HsScanner:
    """Hyperscan: every pattern in one database, scanned once."""

    def __init__(self, patterns: Sequence[tuple[bytes, bool]], cache: ScannerCache | None = None) -> None:
        self.db: Any = None
        if not patterns:
            return
        expressions, ids, flags = [], [], []
        for index, (pattern, caseless) in enumerate(patterns):
            flag = hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_ALLOWEMPTY
            if caseless:
                flag |= hyperscan.HS_FLAG_CASELESS
            for piece in split_long(pattern, HS_MAX_PATTERN):  # pieces report the pattern's id
                expressions.append(piece)
                ids.append(index)
                flags.append(flag)
        key = cache.key(patterns) if cache is not None else ""
        self.db = _cached_database(cache, key)
        if self.db is None:
            self.db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self.db.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
            if cache is not None:
                cache.store(key, hyperscan.dumpb(self.db))
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


def scanner_cache(folder: Path) -> ScannerCache | None:
    """Compiled scanner databases kept in `folder`; None without hyperscan (nothing to keep)."""
    # the module's own version, not importlib.metadata's lookup (~8 ms of imports on every run)
    return ScannerCache(folder, f"hyperscan {hyperscan.__version__}") if hyperscan is not None else None


def _cached_database(cache: ScannerCache | None, key: str) -> Any:
    """The database stored under `key`; None when there is none or hyperscan refuses it."""
    payload = cache.load(key) if cache is not None else None
    if payload is None:
        return None
    try:
        return hyperscan.loadb(payload, hyperscan.HS_MODE_BLOCK)
    except hyperscan.error:  # another build's format: compiled afresh, and stored over it
        return None


def make_scanner(
    patterns: Sequence[tuple[bytes, bool]], *, accelerate: bool = True, cache: ScannerCache | None = None
) -> Scanner:
    """A scanner for (regex, caseless) pairs: hyperscan when installed and asked for, its database
    from `cache` when it holds it (and stored there when compiled)."""
    if accelerate and hyperscan is not None:
        try:
            return HsScanner(patterns, cache)
        except hyperscan.error:  # a pattern hyperscan does not support: the stdlib reads it all
            pass
    return ReScanner(patterns)


def accelerated() -> bool:
    return hyperscan is not None
