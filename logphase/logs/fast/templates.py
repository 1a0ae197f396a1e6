"""Line templates: the byte shapes of steady lines' prefixes, learned from lines the matcher read (pure)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from logphase.logs.matcher import RANK_CAPTURES
from logphase.packs import PackSet
from logphase.packs.model import parse_time

# A line shape seen this often in steady lines becomes a template (a recompile of the scanners).
ADOPT_AFTER = 2
MAX_TEMPLATES = 64

DIGIT = -1  # a template atom: any ASCII digit (a timestamp's, a pid's)
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
    # where the timestamp starts in the prefix, the strftime format of its text up to the hour
    # (`%Y-%m-%d %H`), and whether it drops the month's leading zero (glog's `E321` is March 21): what
    # tells a line of another hour than the log's clock (FastLines)
    clock: tuple[int, str, bool, int] | None = None  # ... and the length of that text

    def regex(self) -> bytes:
        return _atoms_regex(self.atoms)

    def regex_off_hour(self, hour: datetime | None) -> bytes | None:
        """A line of this template stamped in another hour than `hour` (any stamped line: None)."""
        if self.clock is None:
            return None
        start, hour_format, unpadded, length = self.clock
        key = "" if hour is None else hour.strftime(hour_format)
        key = key.removeprefix("0") if unpadded else key
        other = b"(?!" + re.escape(key.encode()) + b")" if key else b""
        return _atoms_regex(self.atoms[:start]) + other + _atoms_regex(self.atoms[start : start + length])


def _atoms_regex(atoms: tuple[int, ...]) -> bytes:
    return b"".join(b"[0-9]" if atom == DIGIT else re.escape(bytes([atom])) for atom in atoms)


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
    kept: set[int] = set()  # the digits of the prefix groups that name the rank stay as they are
    position = 0
    clock: tuple[int, str, bool, int] | None = None
    for prefix_id in fields.prefixes:
        prefix = by_id[prefix_id]
        found = prefix.pattern.match(text[position:])
        if found is None:
            return None
        for group in RANK_CAPTURES & set(found.re.groupindex):
            if found.start(group) >= 0:
                start, end = found.span(group)
                kept |= set(range(position + start, position + end))
        if "ts" in found.re.groupindex and found.start("ts") >= 0:
            clock = _clock_of(found["ts"], position + found.start("ts"), prefix.time_formats) or clock
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
    if stamp != "none" and clock is None:
        return None  # a stamp whose hour cannot be told from its bytes: every line is read
    return Template(atoms, fields.rank, stamp, clock if stamp != "none" else None)


def _clock_of(stamp: str, start: int, formats: tuple[str, ...]) -> tuple[int, str, bool, int] | None:
    """Where a prefix's stamp starts and the format of its text up to the hour, from the format that
    reads it (`%m-%d %H:%M:%S` → `%m-%d %H`); None for a stamp whose text that format does not
    write back (its hour cannot be told from its bytes)."""
    for fmt in formats:
        parsed = parse_time(stamp, (fmt,))
        if parsed is None:
            continue
        hour_format = fmt[: fmt.find("%H") + 2] if "%H" in fmt else ""
        key = parsed[0].strftime(hour_format) if hour_format else ""
        if not key or not (stamp.startswith(key) or (key[0] == "0" and stamp.startswith(key[1:]))):
            return None
        unpadded = not stamp.startswith(key)
        return start, hour_format, unpadded, len(key) - unpadded
    return None


class TemplateTrie:
    """Templates as a trie, to write the regex of "a line that starts with none of them"."""

    def __init__(self) -> None:
        self.children: dict[int, TemplateTrie] = {}
        self.leaf = False

    def add(self, atoms: tuple[int, ...]) -> bool:
        node = self
        for atom in atoms:
            kids = node.children
            if (atom == DIGIT and any(48 <= k <= 57 for k in kids)) or (48 <= atom <= 57 and DIGIT in kids):
                return False  # a digit class beside a literal digit: no simple complement
            node = kids.setdefault(atom, TemplateTrie())
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
class TemplateSet:
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
        trie = TemplateTrie()
        if not all(trie.add(t.atoms) for t in [*self.known, template]):
            return False
        self.known.append(template)
        return True

    def regex(self) -> re.Pattern[bytes]:
        """Matches a line's start on a known template; its `lastindex` - 1 is the template's index."""
        return re.compile(b"|".join(b"(" + t.regex() + b")" for t in self.known))


def _class_byte(byte: int) -> bytes:
    return b"\\" + bytes([byte]) if bytes([byte]) in b"\\]^-[" else bytes([byte])
