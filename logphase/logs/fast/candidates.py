"""Which lines of a chunk the matcher must see: one compiled scan, grown with the templates and steady kinds learned."""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from logphase.logs.clocks import timed_prefixes
from logphase.logs.fast.cache import ScannerCache
from logphase.logs.fast.plan import Check, Plan, could_be_read, message_matches, message_start
from logphase.logs.fast.scanners import ReScanner, Scanner, make_scanner
from logphase.logs.fast.templates import (
    STAMP_KINDS,
    BareStarts,
    Template,
    TemplateSet,
    TemplateTrie,
    extends,
    holds,
    off_hosts,
    text_of,
    time_step,
)
from logphase.packs import Rule

RECOMPILE_EVERY = 256  # emitted lines between two recompiles of the scanners
# ... or bytes scanned: in a quiet stretch few lines are emitted, and a scanner compiled before the
# last template or kind was learned sends every line of that kind through the check in Python
RECOMPILE_BYTES = 8 << 20


@dataclass
class Kind:
    """Lines of one template that hold one steady factor and are its rule's (a factor two rules share
    makes a kind of each: a line is the one whose rule it is, `SteadyRuns._of_kind`)."""

    template: Template
    factor: bytes
    rule: Rule
    pattern: re.Pattern[bytes]


# (template, steady rule id) → the kinds on that template whose rule, where it matches a line, wins it
# over that rule: a line holding the rule's factor is no event of it when one of them matches it
# (`shadowed`; SGLang's traffic `Prefill batch` mark over the warmup's, their factor one)
Shadows = Mapping[tuple[Template, str], Sequence[tuple[bytes, Rule]]]
# (template, steady factor, rule id): a kind registered (`CandidateScan.registered`)
Registered = Container[tuple[Template, bytes, str]]


def outranks(winner: Rule, loser: Rule, order: Mapping[str, int]) -> bool:
    """Whether `loser` can never win a line `winner` matches, whatever system the log shows: the
    matcher takes the first rule that matches in priority order, and passes it over only for a later
    one of the log's system (`SourceMatcher._best_rule`), which `loser` is not when it has no system,
    when `winner` has none (taken at once), or when both have the same. A rule gated on a prefix is
    left out (the template does not keep the prefixes' ids)."""
    return (
        order[winner.id] < order[loser.id]
        and not winner.after_prefix
        and (not loser.system or winner.system is None or winner.system == loser.system)
    )


def rule_order(plan: Plan) -> dict[str, int]:
    """Each steady rule's place in the matcher's order (`outranks`): the packs' rules by priority, then the
    fallback rules of the logger's modules (a line no rule reads is placed by its module)."""
    order = {rule.id: index for index, rule in enumerate(plan.packs.rules)}
    last = len(order)
    return order | {rule_id: last for rule_id in plan.steady_rules if rule_id not in order}


def shadowed(shadows: Shadows, template: Template, rule_id: str, line: bytes) -> bool:
    """Whether the line (on `template`, from its envelopes' end) is no event of the steady rule `rule_id`:
    a rule that outranks it, of a kind on this template, matches what follows the template."""
    found = shadows.get((template, rule_id))
    if not found:
        return False
    message: str | None = None
    for other, rule in found:
        if other in line:
            if message is None:
                message = text_of(line)[len(template.atoms) - template.envelope :]
            if rule.match(message) is not None:
                return True
    return False


class CandidateScan:
    """The scanner of one source: candidate literals and triggers from the plan, lines that start
    with no learned template, and lines with a steady factor whose template has not shown that
    factor's run yet. Learning a template or a kind marks it stale; `refresh` recompiles."""

    def __init__(
        self, plan: Plan, *, accelerate: bool, cache: ScannerCache | None = None, enveloped: bool = False
    ) -> None:
        self.plan = plan
        # a line of no prefix that may hold nothing a prefix rule, a kind or a candidate needs is left
        # unread as a template's line is (`BareStarts`); in envelopes every line has their prefix
        self.bare = None if enveloped else plan.bare
        # a candidate's hit is read only where a rule it is a factor of could match the line (`Plan.checks`). In
        # envelopes too: the scan reads only those that are prefixes of each line (`Envelopes.prefixes_only`), so
        # after them a line's bytes are its text, and a line on a template has its message after it (the check a
        # steady factor's line gets there already); a line on no template is checked whole, envelopes and all (its
        # strings are looked for, its anchored regex not: the message's start is not known). NCCL's transport
        # `Channel 00/0 : 0[0] -> 1[1] via P2P/IPC` under CRI's prefix is no ring laid (`nccl.dist_init.graph_built`).
        self.checks: Sequence[tuple[Check, ...] | None] = plan.checks
        self.accelerate = accelerate
        self.cache = cache
        self.learned = TemplateSet(timed=timed_prefixes(plan.packs))
        self.templates = self.learned.known
        self.kinds: list[Kind] = []
        self.registered: set[tuple[Template, bytes, str]] = set()
        self.factors_of: dict[str, list[bytes]] = {}
        self.order = rule_order(plan)
        self.shadows: dict[tuple[Template, str], list[tuple[bytes, Rule]]] = {}
        for factor, rules in plan.steady.items():
            for rule in rules:
                self.factors_of.setdefault(rule.id, []).append(factor)
        self.dirty = False
        self.compiled_at = 0
        self.ready = False
        self.loose_factors: list[list[bytes]] = []
        self.plain_patterns = 0
        self.template_re: re.Pattern[bytes] | None = None
        self.scanner: Scanner = ReScanner([])
        self.patterns: list[tuple[bytes, bool]] = []  # what `scanner` was compiled from
        self.generation = 0  # compiles so far: names the state `line_starts` answers from (ranges.py)
        self.scanned = 0  # bytes of the windows scanned since the last compile
        self.shapes: dict[Template, re.Pattern[bytes]] = {}  # each template's own regex (`shape`)
        self.stamp_finders: dict[str, re.Pattern[bytes] | None] = {}  # by need: see `stamp_finder`
        self.compiled_templates = 0  # templates[:this] are template_re's
        # an empty line is no rule's (no rule matches an empty message): it changes nothing the matcher
        # keeps but the line count and, as any unstamped line, nothing of its clock, so the scan leaves it
        # unread from the start, before any template is known (a file of a million empty lines)
        self.quiet_empty = not any(rule.match("") is not None for rule in plan.packs.rules)
        self.dirty = self.quiet_empty

    def refresh(self, emitted: int) -> bool:
        """Recompile for new templates and kinds, but not after every one: a scanner that lags
        only sends more lines to the matcher (each compile costs ~50 ms). True when it did."""
        if self.dirty and (
            emitted - self.compiled_at >= RECOMPILE_EVERY or self.scanned >= RECOMPILE_BYTES or not self.ready
        ):
            self._compile(emitted)
            return True
        return False

    def _compile(self, emitted: int) -> None:
        self.dirty = False
        self.stamp_finders = {}
        self.scanned = 0
        self.compiled_at = emitted
        self.ready = bool(self.templates)
        patterns: list[tuple[bytes, bool]] = [(re.escape(f.text), f.caseless) for f in self.plan.candidates]
        patterns += [(trigger, False) for trigger in self.plan.triggers]
        self.template_re = None
        if self.templates or self.quiet_empty:
            trie = TemplateTrie()
            for template in self.templates:
                trie.add(template.atoms, nest=True)
            rest = trie.complement(ends=True, empty=not self.quiet_empty, bare=self.bare)
            if rest is not None:
                patterns.append((b"^" + rest, False))
        if self.templates:
            self.template_re = self.learned.regex()
        self.compiled_templates = len(self.templates)
        self.plain_patterns = len(patterns)
        self.loose_factors = []
        if self.templates:
            by_set: dict[frozenset[Template], list[bytes]] = {}
            # in a source with envelopes, a template line holds a factor only after their prefix (a
            # journald unit named `sglang` is no launch command): lines on no template are read anyway
            envelopes = sorted({t.envelope_regex() for t in self.templates if t.envelope})
            after_envelope = b"^(?:" + b"|".join(envelopes) + b")[^\\n]*" if envelopes else b""
            regions = {t.atoms[: t.envelope] for t in self.templates if t.envelope}
            for factor, rules in self.plan.steady.items():
                hosts = frozenset(t for t in self.templates if hosted(t, factor, rules, self.registered))
                if not hosts:  # every line with it: checked here
                    # anchored after the envelopes only where it can stand inside one: each line-anchored
                    # pattern is a pass from every line start, a literal is not (a line on no template
                    # is a candidate anyway, and the check reads the factor after the envelope)
                    inside = any(holds(region, factor) for region in regions)
                    patterns.append(((after_envelope if inside else b"") + re.escape(factor), False))
                    self.loose_factors.append([factor])
                else:
                    by_set.setdefault(hosts, []).append(factor)
            for hosts, factors in by_set.items():
                pattern = off_hosts(self.templates, hosts, factors)
                if pattern is not None:
                    patterns.append((pattern, False))
                    self.loose_factors.append(factors)
        self.scanner = make_scanner(patterns, accelerate=self.accelerate, cache=self.cache)
        self.patterns = patterns
        self.generation += 1

    def learn(self, template: Template, rule: Rule, raw: bytes) -> bool:
        """One sighting of a steady line's template; True when the scan must change (a template
        adopted, or a factor of this rule first seen on it)."""
        changed = self.learned.sight(template)
        if template in self.templates:
            changed = self._register(template, rule, raw) or changed
        if changed:
            self.dirty = True
        return changed

    def sight(self, template: Template) -> bool:
        """One sighting of the template of a line that made no event; True when it is adopted."""
        adopted = self.learned.sight(template)
        self.dirty = self.dirty or adopted
        return adopted

    def _register(self, template: Template, rule: Rule, raw: bytes) -> bool:
        """Runs of this rule on this template, found by the factors this line holds (the others
        stay candidates until a line shows them: a search for an absent factor costs a full scan)."""
        changed = False
        for factor in self.factors_of.get(rule.id, ()):
            if factor in raw[template.envelope_end(raw) :] and (template, factor, rule.id) not in self.registered:
                self.registered.add((template, factor, rule.id))
                self.kinds.append(Kind(template, factor, rule, self.shape(template)))
                self._shadow(template, factor, rule)
                changed = True
        return changed

    def _shadow(self, template: Template, factor: bytes, rule: Rule) -> None:
        """A kind registered: the steady factors of the rules it outranks are shadowed by it on its template."""
        for loser in self.plan.steady_rules.values():
            if loser.id != rule.id and outranks(rule, loser, self.order):
                self.shadows.setdefault((template, loser.id), []).append((factor, rule))

    def template_at(self, buf: bytes, offset: int) -> Template | None:
        """The template a line starts with, as the scan was compiled (what the scanner answers from)."""
        return first_template(self.template_re, self.templates, buf, offset)

    def stamp_finder(self, need: str) -> re.Pattern[bytes] | None:
        """Finds, after a newline, the start of a line on a compiled template whose stamp a line
        needing `need` takes (time_step); None when no template's does."""
        if need not in self.stamp_finders:
            takes = {stamp for stamp in STAMP_KINDS if time_step(need, stamp)[0]}
            compiled = self.templates[: self.compiled_templates]
            shapes = sorted({t.regex() for t in compiled if t.stamp in takes})
            self.stamp_finders[need] = re.compile(b"\n(?:" + b"|".join(shapes) + b")") if shapes else None
        return self.stamp_finders[need]

    def known_template_at(self, buf: bytes, offset: int) -> Template | None:
        """The template a line starts with, of all adopted so far (compiled or not): the first in
        order, as one regex of them all would say (a recompile of one per adoption costs ~20 ms
        where a log keeps showing new shapes, as CRI's trimmed fractions do)."""
        found = self.template_at(buf, offset)
        for template in self.templates[self.compiled_templates :]:
            # the longest it is on: one not compiled yet may extend the compiled one found
            if (found is None or extends(template, found)) and self.shape(template).match(buf, offset):
                found = template
        return found

    def shape(self, template: Template) -> re.Pattern[bytes]:
        """A template's own regex, compiled once."""
        if template not in self.shapes:
            self.shapes[template] = re.compile(template.regex())
        return self.shapes[template]

    def line_starts(self, buf: bytes, start: int, end: int, chunk_end: int) -> list[int]:
        """The starts of the lines in buf[start:end] the matcher must see, in order (the chunk's
        lines end by `chunk_end`)."""
        rules, could_match, gates, anchored = (
            self.plan.steady_rules,
            self.plan.could_match,
            self.plan.gates,
            self.plan.anchored,
        )
        return lines_to_read(
            Hits(buf, start, chunk_end, self.scanner.matches(buf, start, end)),
            self.plain_patterns,
            self.loose_factors,
            self.template_at,
            self.registered,
            self.steady_ids,
            lambda template, rule_id, line: (
                gate_open(gates.get(rule_id), template)
                and could_match(rules[rule_id], line)
                and message_matches(anchored.get(rule_id), message_start(template, line, None), line)
            ),
            self.shadows,
            self.checks,
            self.bare,
        )

    @cached_property
    def steady_ids(self) -> dict[bytes, tuple[str, ...]]:
        """The plan's steady factors with their rules' ids (`lines_to_read`)."""
        return {factor: tuple(rule.id for rule in rules) for factor, rules in self.plan.steady.items()}


def first_template(
    template_re: re.Pattern[bytes] | None, templates: Sequence[Template], buf: bytes, offset: int
) -> Template | None:
    """The template the line at `offset` starts with, by a regex of `templates`' first ones
    (`TemplateSet.regex`: its `lastindex` - 1 is the template's index)."""
    found = template_re.match(buf, offset) if template_re is not None else None
    return None if found is None or found.lastindex is None else templates[found.lastindex - 1]


def hosted(template: Template, factor: bytes, rules: Sequence[Rule], registered: Registered) -> bool:
    """Whether the scanner may pass over the lines on `template` that hold `factor`: a kind of it is
    registered there for each of its rules a line on it could be (gated on none of its prefixes:
    `gate_open`), one at least. A rule of a shared factor not yet seen there leaves them candidates:
    `lines_to_read` tells which rule each is (SGLang's warmup `Prefill batch` before the traffic's)."""
    found = False
    for rule in rules:
        if (template, factor, rule.id) in registered:
            found = True
        elif gate_open(frozenset(rule.after_prefix) or None, template):
            return False
    return found


def gate_open(gate: frozenset[str] | None, template: Template) -> bool:
    """Whether a line on `template` may be an event of a rule gated on the prefixes `gate` (None: not
    gated): every line on it splits into the template's prefixes, and the rule needs one of its own."""
    return gate is None or not gate.isdisjoint(template.prefixes)


@dataclass(frozen=True)
class Hits:
    """A scanner's matches (pattern index, end offset) in buf[start:...]; the lines end by `chunk_end`."""

    buf: bytes
    start: int
    chunk_end: int
    matches: Iterable[tuple[int, int]]


def lines_to_read(
    hits: Hits,
    plain_patterns: int,
    loose_factors: Sequence[Sequence[bytes]],
    template_at: Callable[[bytes, int], Template | None],
    registered: Registered,
    steady: Mapping[bytes, Sequence[str]],
    could_match: Callable[[Template, str, bytes], bool],
    shadows: Shadows,
    checks: Sequence[tuple[Check, ...] | None] = (),
    bare: BareStarts | None = None,
) -> list[int]:
    """The starts of the lines the matcher must see, in order: those a plain pattern (a literal, a
    trigger, the complement of the templates) hit, but a candidate's hit where no rule it is a factor
    of could match the line (`checks`: the strings its regex needs, the prefixes it is gated on; SGLang's
    `… watchdog thread crashed` holds TGI's ` crashed`), and those that hold a steady factor (a loose
    pattern's) unless, for each rule of that factor (`steady`, their ids), its run on their template is
    known, the rule could not match what follows their envelopes (or is gated on prefixes the template
    has none of), or a rule that outranks it wins them (a kind of that template: `shadowed`). A factor
    two rules share is so read where the line could be a rule's whose kind is not registered there, and
    left to the runs where each rule it could be has one (the runs' walk tells which rule it is: a probe).
    The walk's answer and the workers' (ranges.py)."""
    buf = hits.buf
    starts: set[int] = set()
    loose: dict[int, list[bytes]] = {}
    checked: dict[int, list[tuple[Check, ...]]] = {}
    for index, stop in hits.matches:
        line_start = buf.rfind(b"\n", 0, stop) + 1
        if index < len(checks) and (found := checks[index]) is not None:
            checked.setdefault(line_start, []).append(found)
        elif index < plain_patterns:
            starts.add(line_start)
        else:
            loose.setdefault(line_start, []).extend(loose_factors[index - plain_patterns])
    for line_start, candidates in checked.items():
        if line_start not in starts:
            template, line = _line_of(hits, template_at, line_start)
            message = message_start(template, line, bare)
            if any(could_be_read(found, template, line, message) for found in candidates):
                starts.add(line_start)
    for line_start, factors in loose.items():
        if line_start in starts:
            continue
        template, line = _line_of(hits, template_at, line_start)
        if template is None or any(
            f in line
            and any(
                (template, f, rule_id) not in registered
                and could_match(template, rule_id, line)
                and not shadowed(shadows, template, rule_id, line)
                for rule_id in steady[f]
            )
            for f in factors
        ):
            starts.add(line_start)
    return sorted(s for s in starts if s >= hits.start)


def _line_of(
    hits: Hits, template_at: Callable[[bytes, int], Template | None], line_start: int
) -> tuple[Template | None, bytes]:
    """The template of the line at `line_start`, and the line from its envelopes' end."""
    buf = hits.buf
    template = template_at(buf, line_start)
    line_end = buf.find(b"\n", line_start)
    line = buf[line_start : line_end if 0 <= line_end <= hits.chunk_end else hits.chunk_end]
    return template, line if template is None else line[template.envelope_end(line) :]
