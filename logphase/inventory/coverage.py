"""How the packs read each inventory template: by a rule (its phase and kind), knowingly ignored, or undecided.

Each template becomes the line its system prints (synthesis), which goes through the same prefix
stripping and rule matching as `logphase patterns explain`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from logphase.inventory.store import InventoryEntry, release_key
from logphase.inventory.synthesis import synthesise_variants
from logphase.logs.matcher import Explanation, explain
from logphase.packs import IgnoreEntry, PackSet, Rule

RULE, IGNORED, UNDECIDED = "rule", "ignored", "undecided"
# A message that speaks of these is never knowingly ignored: a rule reads it with a kind and a role (issue 24).
NEVER_IGNORED = re.compile(
    r"\b(?:signal|death|exit|kill|hang|stall|timeout|timed out|waiting|wait for|retry|retries\b|not called"
    r"|not registered|heartbeat|no available|shutdown|shut down|shutting down)",
    re.IGNORECASE,
)
FIELD = re.compile(r"\{[^{}]*\}")
# the level letters and words of the systems' prefixes, as the inventory names levels
LEVELS = {"D": "debug", "I": "info", "W": "warning", "E": "error", "F": "critical", "WARN": "warning"}


@dataclass(frozen=True)
class Decision:
    """What the packs make of one template's synthesised line."""

    entry: InventoryEntry
    line: str
    rule: Rule | None  # the winning rule, if any
    ignore: IgnoreEntry | None  # the first ignore entry that names it, if any

    @property
    def outcome(self) -> str:
        if self.rule is not None:
            return RULE
        return IGNORED if self.ignore is not None else UNDECIDED

    @property
    def label(self) -> str:
        """`weight_load/begin`, `-/error` for a rule; `ignored`; `undecided`."""
        if self.rule is None:
            return self.outcome
        return f"{self.rule.phase.value if self.rule.phase else '-'}/{self.rule.kind.value}"


def never_ignored(text: str) -> bool:
    """The template names a signal, a death, an exit, a kill, a hang, a stall, a timeout, a wait, a retry, a call
    or registration that did not happen, a heartbeat, something not available or a shutdown (fields left out)."""
    return NEVER_IGNORED.search(FIELD.sub("", text)) is not None


def wrongly_ignored(decisions: Iterable[Decision]) -> list[Decision]:
    """The templates an ignore entry swallows although they name what is never ignored."""
    return [d for d in decisions if d.outcome == IGNORED and never_ignored(d.entry.text)]


def swallowed_by(result: Explanation, packs: PackSet) -> IgnoreEntry | None:
    """The ignore entry that leaves an explained line unread: a generic pack's, or one of the system whose
    prefix the line has; at the prefix's level when it names one, else at any level a line is printed at
    by default (not DEBUG only)."""
    owners = {prefix.id: pack.systems for pack in packs.packs for prefix in pack.prefixes}
    systems = {system for prefix in result.prefix.prefixes for system in owners.get(prefix, ())}
    raw = result.prefix.level
    level = LEVELS.get(raw.upper(), raw.lower()) if raw else None
    return next(
        (
            ignored
            for pack in packs.packs
            for ignored in pack.ignores
            if (not ignored.systems or systems & set(ignored.systems))
            and (not ignored.levels or (level in ignored.levels if level else set(ignored.levels) != {"debug"}))
            and ignored.pattern.search(result.message) is not None
        ),
        None,
    )


def decide(entry: InventoryEntry, packs: PackSet) -> Decision:
    """The first synthesised variant a rule reads decides; when none does, the ignore entries are
    asked about the first (the best-guessed) variant."""
    variants = synthesise_variants(entry)
    line, result = variants[0], explain(variants[0], packs)
    for variant in variants[1:]:
        if result.matches:
            break
        candidate = explain(variant, packs)
        if candidate.matches:
            line, result = variant, candidate
    rule = result.matches[0][0] if result.matches else None
    ignore = next(
        (
            ignored
            for pack in packs.packs
            for ignored in pack.ignores
            if ignored.ignores(entry.system, entry.level, result.message)
        ),
        None,
    )
    return Decision(entry, line, rule, ignore)


@dataclass
class ReleaseCoverage:
    """One release's templates by outcome and by what the rules make of them."""

    system: str
    release: str
    labels: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())

    @property
    def decided(self) -> int:
        return self.total - self.outcomes[UNDECIDED]

    @property
    def share_decided(self) -> float:
        return self.decided / self.total if self.total else 1.0


def coverage_by_release(decisions: Iterable[Decision]) -> list[ReleaseCoverage]:
    """Per system and release (in version order), the count of each outcome and label."""
    table: dict[tuple[str, str], ReleaseCoverage] = {}
    for decision in decisions:
        entry = decision.entry
        for release in entry.releases:
            row = table.setdefault((entry.system, release), ReleaseCoverage(entry.system, release))
            row.outcomes[decision.outcome] += 1
            row.labels[decision.label] += 1
    return sorted(table.values(), key=lambda row: (row.system, release_key(row.release)))
