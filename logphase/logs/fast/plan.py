"""The scan plan of a pack set: the factors that make a line a candidate, the steady rules, the triggers."""

from __future__ import annotations

import hashlib
import marshal
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from logphase.disk_cache import DiskCache
from logphase.frames import DEBUGGER_THREAD_TRIGGER, SIGNAL_HANDLER_TRIGGER
from logphase.logs.envelope import RECORD_START
from logphase.logs.fast.factors import Factor, regex_factors, regex_requirements, rule_factors
from logphase.logs.fast.templates import BareStarts, Template, bare_starts, text_of
from logphase.logs.matcher import (
    BLOCK_MARKERS,
    CHAINED,
    FALLBACK_PACK,
    FRAME_HEADERS,
    LOGGED_EXCEPTION_TRIGGER,
    RANK_CAPTURES,
    fallback_rule,
)
from logphase.logs.reader import AUTOLINK_BYTES, WRITTEN_ESCAPE_BYTES
from logphase.logs.rich_box import TRIGGER as RICH_TRIGGER
from logphase.logs.timeline import TIMELINE_CAPTURES
from logphase.packs import ModuleHint, PackSet, Rule
from logphase.phases import EventKind

# Lines that always reach the matcher: progress-bar rewrites (a carriage return inside a line; the
# one of CRLF ends it and changes nothing), colour codes (and their remnants without ESC: `[0m`; their ESC written
# out: `#033[`, `^[[`, the reader's table), a linkifier's link (the reader undoes it: its bytes are not the line's
# text), a bar glued to a log line (`GLUED_BAR`), and the non-ASCII letters whose lower case is ASCII (a caseless
# literal could hide behind them).
CARRIAGE_RETURN = b"\\r[^\\n]"
ALWAYS_BYTES = (b"\x1b", b"[0m", *WRITTEN_ESCAPE_BYTES, AUTOLINK_BYTES)
# A line the reader splits in two (`reader.line_updates`: a `%` on it and a record's start right after a `]`, a bar
# without its final newline glued to the next log line): the record after the bar is no line the scan saw. Its
# lookahead dropped (a bytes regex that matches at least as much: `glued_bar`). A bar line alone is any line: read
# where a rule could match it (the bar rules' checks), else summarised; its time is the stamp before it either way.
UNICODE_CASE_BYTES = (b"\xc4\xb0", b"\xe2\x84\xaa", b"\xc5\xbf")
FRAME_LINE = b'File "'  # what TRACEBACK_FRAME needs
# reader.JSON_GLUED's record opening after other text (a bytes regex that matches at least as much)
JSON_GLUED_TRIGGER = b'[^\\s:,\\[]\\{"timestamp":"\\d{4}-'


def is_steady(rule: Rule) -> bool:
    """A rule whose repeats only move the timeline's "last seen" marks: a phase mark that carries
    nothing the timeline counts. Its lines can be summarised by the first and last of a run."""
    return (
        rule.kind is EventKind.MARK
        and rule.phase is not None
        and not rule.in_block
        and not rule.opens_block
        and not (RANK_CAPTURES | TIMELINE_CAPTURES) & rule.pattern.group_names
    )


@dataclass
class Plan:
    """The packs turned into what the byte scan needs: the factors that make a line a candidate,
    the steady rules and the factors that identify them."""

    packs: PackSet
    enabled: bool
    candidates: list[Factor]
    # factor → the steady rules it belongs to, in the matcher's order: where two share one (SGLang's two
    # `Prefill batch` marks), which of them a line is is told by what each needs of it (`Check`), and each
    # rule's run on a template is a kind of its own
    steady: dict[bytes, tuple[Rule, ...]]
    triggers: list[bytes]  # regexes (bytes) whose lines always reach the matcher
    requires: dict[str, list[frozenset[bytes]]] = field(default_factory=dict)  # steady rule → sets
    reason: str = ""
    # by candidate (as `candidates`): what each rule it is a factor of needs of a line (`Check`), None where a
    # hit is always read (a caseless rule of non-ASCII strings, a logger's module, a rule whose needs are not known)
    checks: list[tuple[Check, ...] | None] = field(default_factory=list)

    def could_match(self, rule: Rule, line: bytes) -> bool:
        """False when the line lacks one of the strings the rule's regex needs."""
        return holds_required(self.requires.get(rule.id, ()), line)

    @cached_property
    def steady_rules(self) -> dict[str, Rule]:
        """The steady rules by id, in the matcher's order."""
        return {rule.id: rule for rules in self.steady.values() for rule in rules}

    @cached_property
    def anchored(self) -> dict[str, str]:
        """The steady rules anchored at the message's start, by id: their regexes (`anchored_regex`)."""
        found = ((rule.id, anchored_regex(rule)) for rule in self.steady_rules.values())
        return {rule_id: regex for rule_id, regex in found if regex is not None}

    @property
    def steady_factors(self) -> list[bytes]:
        return sorted(self.steady)

    @cached_property
    def gates(self) -> dict[str, frozenset[str]]:
        """The prefixes each steady rule gated on them needs (`after_prefix`): a line on a template that
        splits into none of them is never that rule's, whatever factor it holds (vLLM's `Custom allreduce
        is disabled`, a factor SGLang's lines hold too, after SGLang's prefix)."""
        return {rule.id: frozenset(rule.after_prefix) for rule in self.steady_rules.values() if rule.after_prefix}

    @cached_property
    def bare(self) -> BareStarts | None:
        """Which lines of no prefix a scan of a source without envelopes may leave unread (once a plan)."""
        return bare_starts(self.packs, self.steady)


# What a rule needs of a line: the prefixes it is gated on (None: not gated), the sets of strings its regex needs
# one of each of (`regex_requirements`, the pack's literal), its regex where it is anchored at the message's
# start and shipped (None otherwise): on a template the message is what follows it, and the regex tells it; and
# whether the strings are caseless (lower case: the line is lowered to look for them).
Check = tuple[frozenset[str] | None, tuple[frozenset[bytes], ...], str | None, bool]


def candidate_check(rule: Rule) -> Check | None:
    """What a line must have for the rule to match it, where that is known: its regex's strings (a caseless
    rule's lowered, where they are ASCII: a non-ASCII letter whose lower case is ASCII is a trigger of its own,
    UNICODE_CASE_BYTES), and the regex itself where it is anchored at the message's start and case-sensitive
    (`^Prefill batch[.,]`: `Prefill batch(mixed` holds every string it needs, and fails right after its
    literal). Only a shipped pack's regex (no timeout): a user's runs in the matcher under its timeout, never
    here."""
    sets = regex_requirements(rule.pattern.pattern)
    if rule.literal is not None:
        sets.append(frozenset({rule.literal.encode()}))
    if rule.ignore_case:
        if not all(text.isascii() for options in sets for text in options):
            return None
        lowered = tuple(frozenset(text.lower() for text in options) for options in sets)
        return (frozenset(rule.after_prefix) or None, lowered, None, True)
    return (frozenset(rule.after_prefix) or None, tuple(sets), anchored_regex(rule), False)


def anchored_regex(rule: Rule) -> str | None:
    """The rule's regex where it is anchored at the message's start and shipped (a user's pack runs in the
    matcher under its timeout, never here): what follows a line's template must match it (`message_matches`)."""
    text = rule.pattern.pattern
    return text if text.startswith("^") and rule.pattern.timeout is None else None


def holds_required(requires: Iterable[frozenset[bytes]], line: bytes) -> bool:
    """Whether the line holds one string of each set a rule's regex needs (`Plan.requires`)."""
    return all(any(text in line for text in options) for options in requires)


MAGIC = b"logphase-scan-plan 1\n"
KEEP = 16
# The code a plan is built by (beside the packs, whose digest names their own code): another
# version of it is another key (the reader's: its table of written escapes is in ALWAYS_BYTES).
PLAN_CODE = ("plan.py", "factors.py", "../matcher.py", "../timeline.py", "../reader.py", "../rich_box.py")


def plan_cache(folder: Path) -> DiskCache:
    """The on-disk cache of plans in `folder`: building one parses ~80 of the packs' regexes for
    their factors (~11 ms of every run)."""
    return DiskCache(folder, MAGIC, KEEP)


def plan_for(packs: PackSet, triggers: Sequence[re.Pattern[str]] = (), cache: DiskCache | None = None) -> Plan:
    """The scan plan of a pack set, remembered by the pack set itself (packs are immutable once
    loaded), and kept in `cache` where the caller names one (the library alone writes nothing)."""
    key = tuple(t.pattern for t in triggers)
    plan = packs.plans.get(key)
    if plan is None:
        plan = packs.plans[key] = _stored_plan(packs, triggers, cache)
    return plan


def _stored_plan(packs: PackSet, triggers: Sequence[re.Pattern[str]], cache: DiskCache | None) -> Plan:
    """The plan from the on-disk cache when it holds this pack set's (packs of the same files,
    versions and code: `PackSet.digest`), else built, and stored there."""
    if cache is None or not packs.digest:
        return _build_plan(packs, triggers)
    key = cache.key([packs.digest.encode(), _code_digest(), *(t.pattern.encode() for t in triggers)])
    payload = cache.load(key)
    if payload is not None:
        try:
            return _plan_from_data(packs, marshal.loads(payload))
        except Exception:  # a checksum that holds over what is no plan of these packs: never trusted
            cache.remove(key)
    plan = _build_plan(packs, triggers)
    cache.store(key, marshal.dumps(_plan_data(plan)))
    return plan


def _plan_data(plan: Plan) -> tuple[Any, ...]:
    """The plan as plain data (marshal): its rules by id."""
    candidates = [(factor.text, factor.caseless) for factor in plan.candidates]
    steady = [(text, [rule.id for rule in rules]) for text, rules in plan.steady.items()]
    checks = [
        None
        if found is None
        else [(None if g is None else sorted(g), list(sets), regex, caseless) for g, sets, regex, caseless in found]
        for found in plan.checks
    ]
    return (plan.enabled, candidates, steady, plan.triggers, plan.requires, plan.reason, checks)


def _plan_from_data(packs: PackSet, data: tuple[Any, ...]) -> Plan:
    enabled, candidates, steady, triggers, requires, reason, checks = data
    rules = {rule.id: rule for rule in packs.rules} | fallback_rules(packs)
    return Plan(
        packs=packs,
        enabled=bool(enabled),
        candidates=[Factor(bytes(text), bool(caseless)) for text, caseless in candidates],
        steady={bytes(text): tuple(rules[rule_id] for rule_id in ids) for text, ids in steady},
        triggers=[bytes(trigger) for trigger in triggers],
        requires={str(rule_id): [frozenset(options) for options in sets] for rule_id, sets in requires.items()},
        reason=str(reason),
        checks=[
            None
            if found is None
            else tuple(
                (
                    None if gate is None else frozenset(map(str, gate)),
                    tuple(frozenset(options) for options in sets),
                    None if regex is None else str(regex),
                    bool(caseless),
                )
                for gate, sets, regex, caseless in found
            )
            for found in checks
        ],
    )


def _code_digest() -> bytes:
    digest = hashlib.sha256()
    try:
        for name in PLAN_CODE:
            digest.update((Path(__file__).parent / name).read_bytes())
    except OSError:  # installed without its sources: the packs' digest holds the logphase version
        return b""
    return digest.digest()


def _build_plan(packs: PackSet, triggers: Sequence[re.Pattern[str]]) -> Plan:
    prefixes = {p.id: p for p in packs.prefixes}
    candidates: set[Factor] = set()
    unfiltered: list[str] = []
    steady_factors: dict[str, frozenset[Factor]] = {}
    owners_of: dict[Factor, list[Rule]] = {}  # a candidate → the rules it is a factor of (none: a module's file)
    for rule in packs.rules:
        if rule.in_block:
            continue  # only inside a traceback, and the matcher sees every line of one (`busy`)
        factors = rule_factors(rule, prefixes)
        if factors is None:
            unfiltered.append(rule.id)
            continue
        for factor in factors:
            owners_of.setdefault(factor, []).append(rule)
        if is_steady(rule) and not any(f.caseless for f in factors):
            steady_factors[rule.id] = factors
        else:
            candidates |= factors
    steady_factors = _told_apart(packs, steady_factors)
    # a line of a known system no rule reads is placed by its logger's module (`[[module]]`, the matcher's fallback)
    marks, worded, unread = module_marks(packs)
    steady_factors.update((rule.id, frozenset({Factor(file, False)})) for file, rule in marks.items())
    candidates |= {Factor(file, False) for file in unread}
    modules = {Factor(file.encode(), False) for file in packs.module_hints}
    steady: dict[bytes, tuple[Rule, ...]] = {}
    for rule in (*packs.rules, *marks.values()):  # the matcher's order: a factor's rules in it
        factors = steady_factors.get(rule.id)
        if factors is None:
            continue
        # a factor two steady rules share is both's: a line holding it is the kind of the one whose needs
        # it meets (`lines_to_read`), each rule's run a kind of its own (`CandidateScan._register`)
        for factor in sorted(factors, key=lambda f: f.text):  # one order in every process
            steady[factor.text] = (*steady.get(factor.text, ()), rule)
    trigger_patterns = [CARRIAGE_RETURN, *(re.escape(b) for b in ALWAYS_BYTES), glued_bar(), *worded]
    # JSON records glued on one line (reader.JSON_GLUED): the records after the first are no lines the scan saw
    trigger_patterns.append(JSON_GLUED_TRIGGER)
    if worded or any(f.caseless for f in candidates):
        trigger_patterns += [re.escape(b) for b in UNICODE_CASE_BYTES]
    markers = {m.encode() for m in (*BLOCK_MARKERS, *FRAME_HEADERS, *CHAINED)}
    trigger_patterns += [re.escape(m) for m in sorted(markers)]
    # a frame without its `Traceback` line (a cut excerpt) opens a block too, whatever its prefix
    trigger_patterns.append(re.escape(FRAME_LINE))
    # a fatal signal handler's frame without its header opens a block too (frames.SIGNAL_HANDLER_FRAME)
    trigger_patterns.append(SIGNAL_HANDLER_TRIGGER)
    # a native debugger's thread line opens a dump whose frames the matcher reads (frames.DEBUGGER_THREAD)
    trigger_patterns.append(DEBUGGER_THREAD_TRIGGER)
    # an exception line a logger wrote at its error level opens a block too (matcher.LOGGED_EXCEPTION)
    trigger_patterns.append(LOGGED_EXCEPTION_TRIGGER)
    # a frame of rich's box, or a part of one, opens a block too, or may (logs/rich_box.py; its top border holds
    # `Traceback (most recent call last)`, a marker)
    trigger_patterns.append(RICH_TRIGGER)
    trigger_patterns += [widen_classes(t.pattern).encode() for t in triggers]
    requires: dict[str, list[frozenset[bytes]]] = {}
    for rule in {r.id: r for rules in steady.values() for r in rules}.values():
        sets = regex_requirements(rule.pattern.pattern)
        if rule.literal is not None and not rule.ignore_case:
            sets.append(frozenset({rule.literal.encode()}))
        requires[rule.id] = sets
    ordered = sorted(candidates, key=lambda f: (f.text, f.caseless))
    return Plan(
        packs=packs,
        requires=requires,
        enabled=not unfiltered,
        candidates=ordered,
        checks=[_checks(owners_of.get(factor, ()), factor in modules) for factor in ordered],
        steady=steady,
        triggers=trigger_patterns,
        reason=f"rules without a literal to filter on: {', '.join(unfiltered)}" if unfiltered else "",
    )


def _checks(owners: Sequence[Rule], module: bool) -> tuple[Check, ...] | None:
    """A candidate's checks (`Plan.checks`): one per rule it is a factor of; None where a hit is always read."""
    checks = [candidate_check(rule) for rule in owners]
    if module or not checks or any(check is None for check in checks):
        return None
    return tuple(check for check in checks if check is not None)


def could_be_read(checks: Iterable[Check], template: Template | None, line: bytes, message: int | None) -> bool:
    """Whether a rule of a candidate's `checks` could match the line (from its envelopes' end): on a
    template, one of its gates' prefixes (every line on it splits into the template's prefixes), one
    string of each set its regex needs, and, for a regex anchored at the message's start, a match of
    the message where it is known to start (`message_start`). A line on no template may have any prefix."""
    lowered: bytes | None = None
    for gate, sets, anchored, caseless in checks:
        if gate is not None and template is not None and gate.isdisjoint(template.prefixes):
            continue
        if caseless and lowered is None:
            lowered = line.lower()
        if not holds_required(sets, lowered if caseless and lowered is not None else line):
            continue
        if message_matches(anchored, message, line):
            return True
    return False


def message_start(template: Template | None, line: bytes, bare: BareStarts | None) -> int | None:
    """Where the message the matcher reads starts in the line (from its envelopes' end), where the scan knows:
    after its template (every line on one splits into its prefixes, as `candidates.shadowed` reads it), at
    its start where no prefix rule parses it (`BareStarts.unprefixed`: a tqdm bar of no rule); else None."""
    if template is not None:
        return len(template.atoms) - template.envelope  # its own prefix is ASCII: as many bytes as characters
    return 0 if bare is not None and bare.unprefixed(line) else None


def message_matches(anchored: str | None, message: int | None, line: bytes) -> bool:
    """Whether a rule anchored at the message's start (`anchored_regex`; None: any rule) may match the line,
    its message starting at `message` (None: not known, it may). A rule whose needed strings all stand in a
    line that fails right after its literal (`^Prefill batch[.,]` against SGLang's `Prefill batch(mixed …`)
    leaves it unread."""
    if anchored is None or message is None:
        return True
    compiled = _anchored_regex(anchored)
    if compiled is None:
        return True
    return compiled.search(text_of(line[message:])) is not None


_ANCHORED: dict[str, re.Pattern[str] | None] = {}


def _anchored_regex(text: str) -> re.Pattern[str] | None:
    """A shipped rule's regex compiled once per process (None: the stdlib cannot: the line is read)."""
    if text not in _ANCHORED:
        try:
            _ANCHORED[text] = re.compile(text)
        except re.error:
            _ANCHORED[text] = None
    return _ANCHORED[text]


def module_marks(packs: PackSet) -> tuple[dict[bytes, Rule], list[bytes], list[bytes]]:
    """How the scan finds the lines a logger's module places (`[[module]]`: the matcher's fallback, a line of the
    module's prefix no rule reads is a diagnostic mark of its phase): a file with one entry that takes any message
    is a steady factor, its entry's fallback rule (a mark whose repeats only move the rank's last activity, as a
    steady rule's: its runs are summarised); an entry that takes a message by its words is a trigger, the file and
    one of the words on a line (a line of the file without them is no mark of it, and stays unread); a file with
    two entries that take any message (their prefixes tell them apart) or a word not ASCII (the matcher lowers
    the message as text) is a plain candidate, each line naming it read. Returns the steady factors with their
    rules, the triggers (bytes regexes) and the plain candidates."""
    marks: dict[bytes, Rule] = {}
    worded: list[bytes] = []
    unread: list[bytes] = []
    for file, hints in sorted(packs.module_hints.items()):
        name = file.encode()
        words = [word for hint in hints for word in hint.words]
        catch_all = [hint for hint in hints if not hint.words]
        if len(catch_all) > 1 or not all(word.isascii() for word in words):
            unread.append(name)
            continue
        if catch_all:
            marks[name] = fallback_rule(catch_all[0])
        if words:
            alternatives = b"|".join(re.escape(word.encode()) for word in sorted(set(words)))
            # the file's whole name (`loader.py`, not `base_loader.py`'s end), on one line (a worker's range)
            worded.append(b"(?:^|[^A-Za-z0-9_.\\n-])" + re.escape(name) + b"[^\\n]*(?i:" + alternatives + b")")
    return marks, worded, unread


def modules_read_one_by_one(packs: PackSet) -> list[tuple[ModuleHint, str]]:
    """The `[[module]]` entries each of whose lines the matcher reads (`module_marks`), with why: an entry that
    takes a message by its words (a trigger), and each entry of a file that two entries without words share."""
    costly: list[tuple[ModuleHint, str]] = []
    for hints in packs.module_hints.values():
        catch_all = [hint for hint in hints if not hint.words]
        for hint in hints:
            if len(catch_all) > 1:
                costly.append((hint, "its file has two entries that take any message: each line naming it is read"))
            elif not all(word.isascii() for h in hints for word in h.words):
                costly.append((hint, "a word of its file's entries is not ASCII: each line naming the file is read"))
            elif hint.words:
                costly.append((hint, "it places a message by its words: each line of its file holding one is read"))
    return costly


def fallback_rules(packs: PackSet) -> dict[str, Rule]:
    """The fallback rules of the packs' `[[module]]` entries, by id (a plan's steady rules are pack rules or these)."""
    rules = (fallback_rule(hint) for hints in packs.module_hints.values() for hint in hints)
    return {rule.id: rule for rule in rules}


def votes_in_matcher(rule: Rule) -> bool:
    """Whether the matcher's system vote counts the rule's events (`SourceMatcher.count_unread` for those the
    scan leaves unread): the rules that read lines do; a line its logger's module placed does not."""
    return rule.pack != FALLBACK_PACK


def _told_apart(packs: PackSet, steady_factors: dict[str, frozenset[Factor]]) -> dict[str, frozenset[Factor]]:
    """The steady rules' factors, where one shares a factor with another (the pack's literal, `Waiting
    for ` of two vLLM launch marks) and its regex's own factors are shared by none: those instead
    (every line it matches holds one of them too), so its runs are told apart and summarised."""
    owners: dict[bytes, set[str]] = {}
    for rule_id, factors in steady_factors.items():
        for factor in factors:
            owners.setdefault(factor.text, set()).add(rule_id)
    rules = {rule.id: rule for rule in packs.rules}
    told = dict(steady_factors)
    for rule_id, factors in steady_factors.items():
        if all(len(owners[f.text]) == 1 for f in factors):
            continue
        rule = rules[rule_id]
        own = regex_factors(rule.pattern.pattern) if not rule.ignore_case else None
        if own and not {o.text for o in own} & {f.text for f in _others(told, rule_id)}:
            told[rule_id] = own
    return told


def _others(factors: dict[str, frozenset[Factor]], rule_id: str) -> set[Factor]:
    return {factor for other, found in factors.items() if other != rule_id for factor in found}


def read_one_by_one(packs: PackSet, plan: Plan) -> list[tuple[Rule, str]]:
    """The rules each of whose lines the matcher reads, with why: a regex with no literal (every line
    of a log is a candidate), and a steady mark the scan cannot summarise (a caseless factor: no byte
    string to find its runs by). A log where such lines dominate reads at the matcher's speed, not the
    scan's (issue 27). A factor two steady rules share summarises both (`Plan.steady`)."""
    prefixes = {p.id: p for p in packs.prefixes}
    summarised = set(plan.steady_rules)
    factors_of = {rule.id: rule_factors(rule, prefixes) for rule in packs.rules if not rule.in_block}
    costly: list[tuple[Rule, str]] = []
    for rule in packs.rules:
        if rule.id not in factors_of:
            continue
        found = factors_of[rule.id]
        if found is None:
            costly.append((rule, "its regex has no literal to filter on: every line of a log is a candidate"))
        elif is_steady(rule) and rule.id not in summarised:
            costly.append((rule, "a steady mark whose literal is caseless: its runs are not summarised"))
    return costly


def glued_bar() -> bytes:
    """The trigger of a line the reader splits at a bar's end (see ALWAYS_BYTES): `%`, then a `]` a record starts
    right after, or the other way round, on one line."""
    record = widen_classes(RECORD_START.replace("(?=\\S)", "")).encode()
    # reader.BAR_END_THEN_TEXT: a bar's `n/total [elapsed<` then its bracket closed with text right after it, or cut by
    # a `[` (its `%` may stand anywhere on the line, or be lost with the bar's `|…|` in a paste through markdown)
    bar_end = b"[0-9][kMGTP]?/[0-9.]+[kMGTP]? \\[[0-9][0-9:]*<[^\\[\\]\\n]*(?:\\][^\\s]|\\[)"
    return b"%[^\\n]*\\](?:" + record + b")|\\](?:" + record + b")[^\\n]*%|" + bar_end


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
