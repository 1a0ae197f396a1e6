"""FollowRuns: watch's summary of steady runs, for lines that arrive a batch at a time."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator, Sequence

from logphase.logs.clocks import timed_prefixes
from logphase.logs.fast.cache import ScannerCache
from logphase.logs.fast.candidates import outranks, rule_order
from logphase.logs.fast.plan import Plan, message_matches, message_start, votes_in_matcher
from logphase.logs.fast.runs import Run, Runs, book_runs
from logphase.logs.fast.scanners import make_scanner
from logphase.logs.fast.stats import ScanStats
from logphase.logs.fast.templates import TemplateSet, learn_template
from logphase.logs.matcher import Event, SourceMatcher
from logphase.logs.reader import Line
from logphase.packs import Rule


class FollowRuns:
    """What FastLines does for a file, for lines that arrive a batch at a time (`logphase watch`):
    once the matcher has seen two lines of a steady run (a serving batch, an access line, NCCL
    chatter on one template), later lines of the run are held back and handed to the matcher only
    when a line of another kind comes or the batch ends: the latest of them, and the latest that is
    an event of its run if that is another (a line holding the run's factors on its template that its
    rule's regex refuses is found by a probe, as FastLines finds a run's last member). The matcher
    then ends in the state it would reach reading every line; the lines held before that member are
    counted as the run's events for the system vote, as FastLines counts the lines it does not read."""

    def __init__(self, plan: Plan, *, accelerate: bool = True, cache: ScannerCache | None = None) -> None:
        self.plan = plan
        self.packs = plan.packs
        patterns = [(re.escape(f.text), f.caseless) for f in plan.candidates]
        patterns += [(trigger, False) for trigger in plan.triggers]
        self.candidates = make_scanner(patterns, accelerate=accelerate, cache=cache)
        self.steady_factors = list(plan.steady)
        self.rules_of = {factor: {rule.id for rule in rules} for factor, rules in plan.steady.items()}
        steady = [(re.escape(f), False) for f in self.steady_factors]
        self.steady_scanner = make_scanner(steady, accelerate=accelerate, cache=cache)
        self.learned = TemplateSet(timed=timed_prefixes(plan.packs))
        self.templates = self.learned.known
        self.template_re: re.Pattern[bytes] | None = None
        self.registered: list[set[tuple[bytes, str]]] = []  # the kinds on each template: (factor, rule id)
        self.runs: Runs = {}
        self.factors_of: dict[str, list[bytes]] = {}
        for factor, rules in plan.steady.items():
            for rule in rules:
                self.factors_of.setdefault(rule.id, []).append(factor)
        self.stats = ScanStats()  # since the last `take_stats`
        self.order = rule_order(plan)

    def take_stats(self) -> ScanStats:
        """What was skipped since the last call, for the caller to merge (ScanStats.count_events)."""
        taken, self.stats = self.stats, ScanStats()
        return taken

    def lines(self, batch: Sequence[Line], matcher: SourceMatcher) -> Iterator[Line]:
        """The lines of `batch` the matcher must read, in order, with the held ones due before
        them; then the ones still held (the batch is over: the state must be current)."""
        raws = [line.text.encode("utf-8", "surrogateescape") for line in batch]
        marked, factors = self._scan(raws) if self.templates else (set(), {})
        for index, line in enumerate(batch):
            run = None
            if index in factors and index not in marked and matcher.block is None:
                run = self._run_of(raws[index], factors[index])
            if run is not None and run.stage >= 2:
                run.held.append(line)
                continue
            yield from self._release(matcher)
            yield line
        yield from self._release(matcher)

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

    def _run_of(self, raw: bytes, factors: set[bytes]) -> Run | None:
        """The run this line can only continue: it starts with a known template, and its steady
        factors are all of one rule (or those of others its message does not match: a factor two rules
        share), one of them registered on that template for that rule (else the matcher reads it:
        another rule's events would be lost)."""
        assert self.template_re is not None
        rules_of = self.rules_of
        rules = {rule for factor in factors for rule in rules_of[factor]}
        found = self.template_re.match(raw)
        if found is None or found.lastindex is None:
            return None
        if len(rules) != 1:
            rules = self._unshadowed(raw, rules)
            if len(rules) != 1:
                return None
        rule_id = rules.pop()
        index = found.lastindex - 1
        if not any((factor, rule_id) in self.registered[index] for factor in factors):
            return None
        template = self.templates[index]
        run = self.runs.get((rule_id, template.rank))
        if run is None or not self.plan.could_match(run.rule, raw):
            return None
        # A rule anchored at the message's start is checked by its regex after the template, as the fast
        # walk's `_of_kind` does: `Prefill batch(mixed` holds every string `^Prefill batch[.,]` needs.
        text = raw[template.envelope_end(raw) :]
        if not message_matches(self.plan.anchored.get(run.rule.id), message_start(template, text, None), text):
            return None
        return run

    def _unshadowed(self, raw: bytes, rules: set[str]) -> set[str]:
        """Of the rules of a line's steady factors, those whose regex matches the line's message (as the
        matcher reads it) less those another of them outranks (candidates.outranks: it can never win
        where that one matches): SGLang's `POST /generate` access lines hold the access rule's ` HTTP/`
        but are the warmup request's, its `GET /health` 200 lines hold the 503 rule's factor too (as
        FastLines' `shadowed`). One left: the line is its event. A prefix parse and a few regexes,
        cheaper than the matcher reading the line."""
        steady = self.plan.steady_rules
        fields, message = self.packs.split_prefix(raw.decode("utf-8", "surrogateescape"))
        matching = [steady[rule_id] for rule_id in rules if steady[rule_id].match(message, fields.prefixes) is not None]
        return {
            loser.id
            for loser in matching
            if not any(outranks(winner, loser, self.order) for winner in matching if winner is not loser)
        }

    def _release(self, matcher: SourceMatcher) -> Iterator[Line]:
        """Each run's held lines: the latest (its time is the latest), and the latest event of the run
        before it when the latest is none (probed on a fork of the matcher); the rest are counted."""
        due: list[Line] = []
        for run in self.runs.values():
            if not run.held:
                continue
            held, run.held = run.held, []
            due.append(held[-1])
            members = (index for index in range(len(held) - 1, -1, -1) if self._is_event_of(run, held[index], matcher))
            member = next(members, None)
            if member is None:
                continue  # none of them is an event: each only moved the clock, as the latest does
            if member != len(held) - 1:
                due.append(held[member])
            self.stats.skip(run.rule.system, member)
            if run.rule.system and votes_in_matcher(run.rule):
                matcher.count_unread(run.rule.system, member)  # the rule choice follows the log's system
        yield from sorted(due, key=lambda line: line.number)

    @staticmethod
    def _is_event_of(run: Run, line: Line, matcher: SourceMatcher) -> bool:
        return any(e.rule.id == run.rule.id and e.rank == run.rank for e in matcher.fork().match_line(line))

    def _learn(self, line: Line, rule: Rule) -> None:
        raw = line.text.encode("utf-8", "surrogateescape")
        known = self.template_re.match(raw) if self.template_re is not None else None
        if known is not None and known.lastindex is not None:
            registered = self.registered[known.lastindex - 1]
            if all((f, rule.id) in registered for f in self.factors_of[rule.id] if f in raw):
                return  # nothing new to learn (learning costs a prefix parse per line)
        template = learn_template(self.packs, raw, line.text)
        if template is None:
            return
        if self.learned.sight(template):
            self.registered.append(set())
            self.template_re = self.learned.regex()
        if template not in self.templates:
            return
        self.registered[self.templates.index(template)].update(
            (f, rule.id) for f in self.factors_of[rule.id] if f in raw
        )
