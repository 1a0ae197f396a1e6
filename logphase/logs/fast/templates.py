"""Line templates: the byte shapes of steady lines' prefixes, learned from lines the matcher read (pure)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from logphase.logs.clocks import stamp_format
from logphase.logs.envelope import Envelopes, Prefix, envelope_prefix
from logphase.logs.fast.factors import prefix_needs
from logphase.logs.matcher import RANK_CAPTURES
from logphase.packs import PackSet, Rule
from logphase.packs.model import parse_time
from logphase.packs.regex_facts import leading_literal

# A line shape seen this often in steady lines becomes a template (a recompile of the scanners).
ADOPT_AFTER = 2
MAX_TEMPLATES = 64

DIGIT = -1  # a template atom: any ASCII digit (a timestamp's, a pid's)
# a template atom: one or more ASCII digits, the fraction of an envelope's RFC 3339 stamp that Go's
# writers trim (`.5Z`, `.123456789Z`); only in the envelopes' prefix, whose byte length then varies
# from line to line (`Template.envelope_end`), the line's own prefix after it never
RUN = -2
# The characters a docker-compose service name is made of: a template must hold one that is not,
# or the reader's compose-prefix stripping could change what its lines say.
COMPOSE_NAME = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.[]- \t")


@dataclass(frozen=True)
class Template:
    """A line prefix, byte for byte except its digits outside the rank tags (timestamp, pid,
    thread). Every line that starts with it gets the same prefixes, so the same rank, as the
    line it was learned from; in a source with envelopes it starts with their prefix. `stamp`: "year"
    (a full date), "date" (no year: vLLM), "time" (the time of day: SGLang 0.3), "envelope" (none
    of its own, its envelope's time), "none" (no timestamp)."""

    atoms: tuple[int, ...]
    rank: str | None
    stamp: str
    # the atom where the timestamp starts in the prefix, the strftime format of its text up to the hour
    # (`%Y-%m-%d %H`), and whether it drops the month's leading zero (glog's `E321` is March 21): what
    # tells a line of another hour than the log's clock (FastLines)
    clock: tuple[int, str, bool, int] | None = None  # ... and the length of that text
    envelope: int = 0  # the atoms of the envelopes' prefix: a rule reads what follows them
    hour: int = -1  # the atom where a time of day's hour is (stamp "time"): fast/rollover.py reads it
    # the ids of the prefixes its lines split into: which clock of the log their stamps are on (logs/clocks.py)
    prefixes: tuple[str, ...] = ()

    def regex(self) -> bytes:
        return atoms_regex(self.atoms)

    def envelope_end(self, buf: bytes, start: int = 0) -> int:
        """Where the envelopes' prefix of the line at `start` (on this template) ends in `buf`."""
        position, after = start, 0
        for run in self.runs:
            found = _DIGIT_RUN.match(buf, position + run - after)
            if found is None:
                return start + self.envelope  # not a line on this template
            position, after = found.end(), run + 1
        return position + self.envelope - after

    @cached_property
    def runs(self) -> tuple[int, ...]:
        """The atoms that are runs of digits (`RUN`: all in the envelopes' prefix)."""
        return tuple(index for index, atom in enumerate(self.atoms) if atom == RUN)

    def own_at(self, buf: bytes, start: int, atom: int) -> int:
        """Where in `buf` the byte of an atom of the line's own prefix (after the envelopes') is."""
        return self.envelope_end(buf, start) + atom - self.envelope

    def regex_off_hour(self, hour: datetime | None) -> bytes | None:
        """A line of this template stamped in another hour than `hour` (any stamped line: None)."""
        if self.clock is None:
            return None
        start, hour_format, unpadded, length = self.clock
        key = "" if hour is None else hour.strftime(hour_format)
        key = key.removeprefix("0") if unpadded else key
        other = b"(?!" + re.escape(key.encode()) + b")" if key else b""
        return atoms_regex(self.atoms[:start]) + other + atoms_regex(self.atoms[start : start + length])

    def envelope_regex(self) -> bytes:
        return atoms_regex(self.atoms[: self.envelope])


def holds(atoms: tuple[int, ...], text: bytes) -> bool:
    """Whether some line these atoms stand for holds `text` inside them."""
    if RUN in atoms:  # a run as long as `text` or shorter: longer ones add nothing a shorter one lacks
        at = atoms.index(RUN)
        return any(holds(atoms[:at] + (DIGIT,) * length + atoms[at + 1 :], text) for length in range(1, len(text) + 2))
    return any(_agrees(atoms, at, text) for at in range(len(atoms) - len(text) + 1))


def factor_starts(atoms: tuple[int, ...], factor: bytes, start: int) -> list[int]:
    """The atoms from `start` on (none of them a run) where a line on these atoms may hold `factor`:
    it agrees with them from there, inside them or across their end (what follows is any text)."""
    return [at for at in range(start, len(atoms)) if _agrees(atoms, at, factor)]


def _agrees(atoms: tuple[int, ...], at: int, text: bytes) -> bool:
    """Whether `text` may stand at atom `at` as far as both go (a digit class takes any digit)."""
    pairs = zip(atoms[at:], text, strict=False)
    return all(atom == byte or (atom == DIGIT and 48 <= byte <= 57) for atom, byte in pairs)


def atoms_regex(atoms: tuple[int, ...]) -> bytes:
    return b"".join(_ATOM_REGEX.get(atom) or re.escape(bytes([atom])) for atom in atoms)


_ATOM_REGEX = {DIGIT: b"[0-9]", RUN: b"[0-9]+"}

_DIGIT_RUN = re.compile(rb"[0-9]+")


def learn_template(packs: PackSet, raw: bytes, text: str, envelopes: Envelopes | None = None) -> Template | None:
    """The template of a line, or None when its prefix cannot be trusted to decide the parse. `text`
    is the line the matcher read: out of its `envelopes`, whose prefix the template then starts with."""
    whole = text_of(raw)
    envelope = Prefix(0, None, (), stamped=False)
    if envelopes:
        found = envelope_prefix(envelopes, whole)
        if found is None:
            return None  # a line some layer left bare, or a part CRI cut: its neighbours decide it
        envelope = found
    if whole.encode() != raw.rstrip(b"\r") or whole[envelope.length :] != text:
        return None  # the reader changed it (colour codes, a joined part): the bytes mislead
    fields, message = packs.split_prefix(text)
    length = len(text) - len(message)
    own = text[:length]
    if not length or not own.isascii() or "|" in own or not set(own.encode()) - COMPOSE_NAME:
        return None
    if envelope.length and own[:1].isspace():
        return None  # an indented line is a dump's (the trigger anchored at the line start): never summarised
    region = whole[: envelope.length] + own
    if not region.isascii():
        return None
    # the atoms of the envelopes' prefix: each fraction its stamps have is one (RUN)
    envelope_atoms = envelope.length - sum(end - start - 1 for start, end in envelope.fractions)
    hour = -1
    if fields.time is not None and not fields.time_has_date:
        # the midnight rollover needs the hour of every line: fast/rollover.py reads it where it lies
        time_of_day = f"{fields.time:%H:%M:%S}"
        if time_of_day not in own:
            return None
        hour = envelope_atoms + own.index(time_of_day)
    by_id = {prefix.id: prefix for prefix in packs.prefixes}
    # the digits of the rank labels (the envelope's, the prefix groups that name the rank) stay as they are
    kept: set[int] = {index for start, end in envelope.rank_spans for index in range(start, end)}
    position = 0
    clock: tuple[int, str, bool, int] | None = None
    for prefix_id in fields.prefixes:
        prefix = by_id[prefix_id]
        found_prefix = prefix.pattern.match(text[position:])
        if found_prefix is None:
            return None
        for group in RANK_CAPTURES & set(found_prefix.re.groupindex):
            if found_prefix.start(group) >= 0:
                start, end = found_prefix.span(group)
                kept |= set(range(envelope.length + position + start, envelope.length + position + end))
        if "ts" in found_prefix.re.groupindex and found_prefix.start("ts") >= 0:
            at = envelope_atoms + position + found_prefix.start("ts")
            clock = _clock_of(found_prefix["ts"], at, prefix.time_formats) or clock
        position += found_prefix.end()
    if position != length:
        return None
    # timestamps, pids and thread ids vary from line to line; one template stands for them all
    digits = {index for index, char in enumerate(region) if char.isdigit() and index not in kept}
    runs = {start: end for start, end in envelope.fractions}
    atoms_of: list[int] = []
    index = 0
    while index < len(region):
        if index in runs:
            atoms_of.append(RUN)
            index = runs[index]
            continue
        atoms_of.append(DIGIT if index in digits else ord(region[index]))
        index += 1
    atoms = tuple(atoms_of)
    # the prefixes must parse the same whatever the digits of their timestamps are
    for digit in "09":
        variant = "".join(digit if index in digits else char for index, char in enumerate(region)) + message
        if envelopes:
            other_envelope = envelope_prefix(envelopes, variant)
            if other_envelope is None or (other_envelope.length, other_envelope.rank) != (
                envelope.length,
                envelope.rank,
            ):
                return None
            variant = variant[envelope.length :]
        other, rest = packs.split_prefix(variant)
        if other.prefixes != fields.prefixes or rest != message or other.rank != fields.rank:
            return None
    rank = fields.rank
    if rank is None and envelope.rank is not None:
        rank = f"rank {envelope.rank.rsplit(' ', 1)[-1]}"  # what the matcher makes of the label
    if fields.time is None:
        stamp = "envelope" if envelope.stamped else "none"
    elif not fields.time_has_date:
        stamp = "time"
    else:
        stamp = "year" if fields.time_has_year else "date"
    if stamp not in ("none", "envelope") and clock is None:
        return None  # a stamp whose hour cannot be told from its bytes: every line is read
    clock = clock if stamp not in ("none", "envelope") else None
    return Template(atoms, rank, stamp, clock, envelope_atoms, hour, fields.prefixes)


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


STAMP_KINDS = ("year", "date", "time", "envelope", "none")  # Template.stamp


def time_step(need: str, stamp: str) -> tuple[bool, str]:
    """Walking back from a line that needs `need`: whether a line whose template's stamp is `stamp`
    must be read for it, and what is still needed before it ("": nothing; "year": a full date)."""
    if stamp == "none" or (need == "year" and stamp != "year") or (need == "own" and stamp == "envelope"):
        return False, need
    if stamp == "date":
        return True, "year"
    return True, "own" if stamp == "envelope" else ""


def text_of(raw: bytes) -> str:
    """A line's bytes as the text the reader makes of them, before unwrapping (the `\r` of CRLF removed)."""
    return raw.decode("utf-8", "replace").rstrip("\r")


class TemplateTrie:
    """Templates as a trie, to write the regex of "a line that starts with none of them"."""

    def __init__(self, *, run: bool = False) -> None:
        self.children: dict[int, TemplateTrie] = {}
        self.leaf = False
        self.run = run  # reached by a RUN: a digit here still belongs to it

    def add(self, atoms: tuple[int, ...], *, nest: bool = False) -> bool:
        """Add a template; False (the trie then holds part of it: build another) where it would make
        a line ambiguous: a digit class beside another digit atom, a digit after a run (no simple
        complement), or, unless `nest`, it and another are prefixes of each other (a line on the
        longer is on both; with `nest` the caller takes the longest, `TemplateSet`)."""
        node = self
        for atom in atoms:
            kids = node.children
            if (node.leaf and not nest) or (
                _digits(atom) and (node.run or any(k != atom and _digits(k) and min(k, atom) < 0 for k in kids))
            ):
                return False
            node = kids.setdefault(atom, TemplateTrie(run=atom == RUN))
        if node.children and not nest:
            return False
        node.leaf = True
        return True

    def below(self, atoms: tuple[int, ...]) -> TemplateTrie | None:
        """The node these atoms lead to from here; None where no template goes on so."""
        node: TemplateTrie | None = self
        for atom in atoms:
            node = node.children.get(atom) if node is not None else None
        return node

    def complement(self, *, ends: bool, empty: bool = True, bare: BareStarts | None = None) -> bytes | None:
        """A regex for the text after `^` of any line this node's templates do not start
        (`ends`: also a line that ends before a template does, the empty line too unless not `empty`;
        with no template, any line). With `bare` (the root only), a line whose first byte no template
        starts with is one only where a prefix rule may parse it or it may hold one of bare's factors."""
        if self.leaf:
            return None
        # after a run, a digit would only lengthen it: the run is as long as the line's digits go
        excluded = b"0-9" if self.run else b""
        excluded += b"".join(b"0-9" if atom in (DIGIT, RUN) else _class_byte(atom) for atom in self.children)
        if bare is None:
            options = [b"[^" + excluded + b"\\n]"]
        else:
            firsts = {b for atom in self.children for b in (range(48, 58) if atom in (DIGIT, RUN) else (atom,))}
            options = bare.options(frozenset(firsts))
        options += [b"$"] if ends and empty else []
        # atoms followed by the same text share one class (`TP[0-7]` and what follows once, not eight
        # times: templates that differ in a rank's digit): the pattern, its compile and scan shrink
        after: dict[bytes, list[int]] = {}
        for atom, child in self.children.items():
            rest = child.complement(ends=ends)
            if rest is not None:
                after.setdefault(rest, []).append(atom)
        for rest, atoms in after.items():
            if RUN in atoms:  # not one byte: its own option
                options.append(atoms_regex((RUN,)) + rest)
                atoms.remove(RUN)
            if len(atoms) == 1:
                options.append(atoms_regex((atoms[0],)) + rest)
            elif atoms:
                members = b"".join(b"0-9" if atom == DIGIT else _class_byte(atom) for atom in atoms)
                options.append(b"[" + members + b"]" + rest)
        return b"(?:" + b"|".join(options) + b")"


@dataclass(frozen=True)
class BareStarts:
    """Lines of no prefix, told by their first byte: for each printable ASCII byte but the space, the
    strings one of which a line starting with it must hold for a prefix rule to parse it (none: no
    rule's prefix starts so); any other first byte (a space, a tab, a control byte, non-ASCII, and a
    byte a prefix of no known needs may start with) may start a prefix. Such a line that holds none of
    its byte's strings, no steady factor (a bare line is on no template, where a kind could summarise
    it: `leading`, the text a steady rule's line starts with, else `anywhere`) and no candidate literal
    or trigger (patterns of their own) is no rule's and moves no clock (no stamp, no rank): outside a
    traceback it changes nothing the matcher keeps but the line count (a source in envelopes has none:
    each of its lines is on their prefix)."""

    needs: tuple[tuple[int, frozenset[bytes]], ...]  # (first byte, strings), the bytes whose needs are known
    anywhere: frozenset[bytes] = frozenset()
    leading: frozenset[bytes] = frozenset()

    def unprefixed(self, line: bytes) -> bool:
        """Whether no prefix rule parses the line (on no template): its first byte's needs are known and it
        holds none of them, so its message is the whole line."""
        if not line:
            return False
        for byte, needs in self.needs:
            if byte == line[0]:
                return not any(text in line for text in needs)
        return False

    def options(self, firsts: frozenset[int]) -> list[bytes]:
        """The complement's options for a line whose first byte is none of `firsts` (a template's)."""
        known = [(byte, needs) for byte, needs in self.needs if byte not in firsts]
        read = b"".join(_class_byte(byte) for byte in sorted(firsts | {byte for byte, _ in known}))
        options = [b"[^" + read + b"\\n]"]  # may start a prefix: read, as every line of no template was
        by_needs: dict[frozenset[bytes], list[int]] = {}
        for byte, needs in known:
            by_needs.setdefault(needs, []).append(byte)
        groups = sorted(by_needs.items(), key=lambda item: item[1])
        groups += [(self.anywhere, [byte for byte, _ in known])] if self.anywhere and known else []
        starts_known = {byte for byte, _ in known}
        leading = {text for text in self.leading if text[0] in starts_known}
        for texts, starts in groups:
            if not texts:
                continue  # such a line is read only for a steady factor: no prefix rule starts so
            first = b"[" + b"".join(_class_byte(byte) for byte in starts) + b"]"
            # the string after the first byte, or from it (the line starts with it)
            options.append(first + b"[^\\n]*(?:" + b"|".join(re.escape(text) for text in sorted(texts)) + b")")
            leading |= {text for text in texts if text[0] in starts}
        options += [b"(?:" + b"|".join(re.escape(text) for text in sorted(leading)) + b")"] if leading else []
        return options


def bare_starts(packs: PackSet, steady: Mapping[bytes, Sequence[Rule]]) -> BareStarts | None:
    """The first bytes of lines no prefix rule parses unless they hold a string (`BareStarts`); None
    where a steady rule ignores case (its factor is no byte string)."""
    needs: dict[int, set[bytes] | None] = {byte: set() for byte in range(0x21, 0x7F)}
    for prefix in packs.prefixes:
        gate = prefix.first_chars
        # a gate's first characters in either case (a gate is read from the regex as written)
        starts = (
            set(range(0x21, 0x7F)) if gate is None else {ord(c) for g in gate for c in {g[0].lower(), g[0].upper()}}
        )
        required = prefix_needs(prefix)
        for byte in starts & needs.keys():
            held = needs[byte]
            needs[byte] = None if held is None or required is None else held | required
    anywhere, leading = set(), set()
    for factor, rule in ((factor, rule) for factor, rules in steady.items() for rule in rules):
        if rule.ignore_case:
            return None
        if rule.after_prefix:
            continue  # a line of no prefix is never its
        lead = leading_literal(rule.pattern.pattern)
        if lead:
            leading.add(lead.encode())  # its message is the whole line
        else:
            anywhere.add(factor)
    known = tuple((byte, _least(held)) for byte, held in sorted(needs.items()) if held is not None)
    return BareStarts(known, _least(anywhere), _least(leading))


def _least(texts: Collection[bytes]) -> frozenset[bytes]:
    """The strings of `texts` that hold none of the others: a line holds one of these where it holds
    one of `texts` (fewer literals: hyperscan compiles `[^\\n]*(?:…)` in time with their number)."""
    return frozenset(text for text in texts if not any(other != text and other in text for other in texts))


def off_hosts(templates: Sequence[Template], hosts: Collection[Template], factors: Sequence[bytes]) -> bytes | None:
    """A regex for the lines on one of `templates` but not of `hosts` (those where the factors' runs
    are known) that may hold one of `factors` after their envelopes' prefix. Such a line leaves the
    hosts' templates at a byte p of its own template (none is a prefix of another): it holds a factor
    after p, or from a byte of its template on (inside it, or across its end: a few literals after a
    prefix, where a walk of each factor along the hosts' trie wrote twice the pattern, its compile and
    its scan). Lines on no template are not all found: the complement finds them."""
    trie = TemplateTrie()
    for template in sorted(hosts, key=lambda t: t.atoms):  # the same regex in every process
        trie.add(template.atoms, nest=True)
    rest = trie.complement(ends=False)
    if rest is None:
        return None
    anywhere = b"[^\\n]*(?:" + b"|".join(re.escape(factor) for factor in factors) + b")"
    off = [rest + anywhere]
    off += [
        atoms_regex(template.atoms[:at]) + re.escape(factor)
        for template in templates
        if template not in hosts
        for factor in factors
        for at in factor_starts(template.atoms, factor, template.envelope)
    ]
    # a template that extends a host's (`nests`) never leaves the hosts' trie: its lines, the factor
    # after their template
    off += sorted(
        {
            atoms_regex(template.atoms) + anywhere
            for template in templates
            if template not in hosts and any(extends(template, host) for host in hosts)
        }
    )
    # a template that a host's extends: its lines leave the hosts' trie only after its end, where a factor may
    # already have begun (at the byte that leaves, or on the way there): walked along the hosts' templates below it
    off += sorted(
        {
            atoms_regex(template.atoms) + walk
            for template in templates
            if template not in hosts and any(extends(host, template) for host in hosts)
            for walk in [_held_below(trie.below(template.atoms), factors)]
            if walk is not None
        }
    )
    return b"^(?:" + b"|".join(off) + b")"


def _held_below(node: TemplateTrie | None, factors: Sequence[bytes]) -> bytes | None:
    """A regex for the rest of a line on the hosts' trie at `node` that holds one of `factors` starting
    there or further down the trie and is on no host's template (a host's own line never matches)."""
    if node is None or node.leaf:
        return None
    options = [
        re.escape(factor) + after for factor in factors for after in [_after_factor(node, factor)] if after is not None
    ]
    for atom, child in sorted(node.children.items()):
        deeper = _held_below(child, factors)
        if deeper is not None:
            options.append(atoms_regex((atom,)) + deeper)
    return b"(?:" + b"|".join(options) + b")" if options else None


def _after_factor(node: TemplateTrie, factor: bytes) -> bytes | None:
    """What must follow `factor`, read from `node` on, for its line to be on no host's template: nothing
    where the factor leaves the trie, the rest of a line off the trie where it ends on it, None where it
    ends or passes a host's template."""
    for byte in factor:
        if node.leaf:
            return None
        digit = 48 <= byte <= 57
        if node.run and digit:
            continue  # the run goes on
        child = node.children.get(byte) or (node.children.get(DIGIT) or node.children.get(RUN) if digit else None)
        if child is None:
            return b""
        node = child
    return node.complement(ends=True)


def extends(long: Template, short: Template) -> bool:
    """Whether every line on `long` starts with `short` too (its atoms begin with all of them)."""
    return len(long.atoms) > len(short.atoms) and long.atoms[: len(short.atoms)] == short.atoms


def nests(long: Template, short: Template, timed: frozenset[str]) -> bool:
    """Whether `long` may be known beside `short`, which it extends: a line on it is on `short`
    too, and whichever of the two a reader takes it for, the line gets the same rank, the same
    stamp read at the same bytes, on the same clock of the log (its timed prefixes) and the same
    envelopes' prefix: only where its message starts differs (SGLang's uvicorn `[stamp] INFO:     `
    beside its own `[stamp] `). The longest is the line's (`TemplateSet.regex`)."""
    return (
        extends(long, short)
        and long.prefixes[: len(short.prefixes)] == short.prefixes
        and (long.rank, long.stamp, long.clock, long.envelope, long.hour)
        == (short.rank, short.stamp, short.clock, short.envelope, short.hour)
        and stamp_format(long.prefixes, timed) == stamp_format(short.prefixes, timed)
    )


@dataclass
class TemplateSet:
    """The line templates learned from the lines the matcher read: one is adopted once seen
    ADOPT_AFTER times, while fewer than MAX_TEMPLATES are known, unless a line could not tell
    which it is on (a digit class beside a digit) or it and a known one are prefixes of each other
    and do not `nest` (then a line on the longer is on the longer: `regex`). A template refused
    stays refused (those known only grow): its lines' sightings cost nothing more."""

    known: list[Template] = field(default_factory=list)
    sightings: Counter[Template] = field(default_factory=Counter)
    timed: frozenset[str] = frozenset()  # the prefixes that read a stamp (logs/clocks.py)
    refused: set[Template] = field(default_factory=set)

    def sight(self, template: Template) -> bool:
        """Count one sighting; True when it adopts the template."""
        if template in self.known or template in self.refused:
            return False
        self.sightings[template] += 1
        if self.sightings[template] < ADOPT_AFTER or len(self.known) >= MAX_TEMPLATES:
            return False
        trie = TemplateTrie()
        if not all(trie.add(t.atoms, nest=True) for t in [*self.known, template]) or not all(
            nests(long, short, self.timed)
            for other in self.known
            for long, short in ((template, other), (other, template))
            if extends(long, short)
        ):
            self.refused.add(template)
            del self.sightings[template]
            return False
        self.known.append(template)
        del self.sightings[template]
        return True

    def regex(self) -> re.Pattern[bytes]:
        """Matches a line's start on a known template, the longest it is on (a template is not
        taken where a known one that extends it matches); its `lastindex` - 1 is the template's index."""
        return re.compile(b"|".join(b"(" + self.own_regex(t) + b")" for t in self.known))

    def own_regex(self, template: Template) -> bytes:
        """A line on `template` and on none of the known templates that extend it."""
        longer = sorted({atoms_regex(t.atoms[len(template.atoms) :]) for t in self.known if extends(t, template)})
        return template.regex() + (b"(?!" + b"|".join(longer) + b")" if longer else b"")


def _digits(atom: int) -> bool:
    """Whether an atom stands for digits (a literal one, the digit class, a run)."""
    return atom in (DIGIT, RUN) or 48 <= atom <= 57


def _class_byte(byte: int) -> bytes:
    return b"\\" + bytes([byte]) if bytes([byte]) in b"\\]^-[" else bytes([byte])
