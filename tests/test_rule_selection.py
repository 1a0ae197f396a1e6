"""The per-line selection of prefixes and rules (issue 27): the rule index's start gate and its any-of texts,
and the prefix split's shortcuts, pick exactly what trying every prefix and every rule in order picks."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from logphase.packs import PackSet
from logphase.packs.model import PREFIX_DEPTH, RAY_DEDUP_SUFFIX, PrefixFields, Rule
from logphase.packs.regex_facts import any_of_literals, start_characters


def matching(rules: tuple[Rule, ...], message: str, prefixes: tuple[str, ...]) -> list[str]:
    return [rule.id for rule in rules if rule.match(message, prefixes) is not None]


def reference_split(packs: PackSet, text: str) -> tuple[PrefixFields, str]:
    """The split as every prefix tried in priority order gives it, each layer merged onto the last."""
    fields = PrefixFields()
    used: set[str] = set()
    for _ in range(PREFIX_DEPTH):
        for prefix in packs.prefixes:
            if prefix.id in used:
                continue
            applied = prefix.apply(text)
            if applied is None:
                continue
            inner, text = applied
            used.add(prefix.id)
            timed = inner if inner.time else fields
            fields = PrefixFields(
                time=timed.time,
                time_has_year=timed.time_has_year,
                time_has_date=timed.time_has_date,
                rank=inner.rank or fields.rank,
                pid=inner.pid or fields.pid,
                level=inner.level or fields.level,
                prefixes=(*fields.prefixes, prefix.id),
                module=inner.module or fields.module,
            )
            break
        else:
            break
    return fields, RAY_DEDUP_SUFFIX.sub("", text) if text.endswith(" across cluster]") else text


def test_every_rule_example_keeps_its_rule_among_the_candidates(packs: PackSet) -> None:
    # GIVEN every example line of every shipped rule, split of its prefixes
    for rule in packs.rules:
        for example in rule.examples:
            fields, message = packs.split_prefix(example)
            # WHEN the index picks the rules worth trying on it
            candidates = packs.candidate_rules(message.lower())
            # THEN every rule that matches it is among them, in the order of all rules
            assert matching(candidates, message, fields.prefixes) == matching(packs.rules, message, fields.prefixes)


def test_starts_and_texts_read_from_the_parse() -> None:
    # GIVEN regexes anchored at the start, with branches, optional heads and zero-width items
    # THEN the starts are every branch's first characters, lower-cased, and none where any start is possible
    assert start_characters(r"^(?:build model|Building Model|loading weights)\.$", False) == frozenset("bl")
    assert start_characters(r"^(?:[A-Z]+:)?Received \d", False) == frozenset("abcdefghijklmnopqrstuvwxyzr")
    assert start_characters(r"^(?=[A-Z])\d?x", True) == frozenset("0123456789x")
    assert start_characters(r"^(?! {4}).*?CUDA", False) is None
    assert start_characters(r"^(?:a)?", False) is None  # may match the empty text
    assert start_characters(r"(?:^|\s)ab", False) is None  # not anchored
    assert start_characters(r"^ſ", True) is None  # folds onto an ASCII letter
    assert start_characters(r"(?m)^ab", False) is None
    # AND the any-of texts are those of the required item with the longest shortest text
    assert any_of_literals(r"^(?:ray\.exceptions\.)?(?:WorkerCrashedError|NodeDiedError)\b") == (
        "NodeDiedError",
        "WorkerCrashedError",
    )
    assert any_of_literals(r"^Sending (?:process (?P<pid>\d+)|group) closing signal") == (" closing signal",)
    assert any_of_literals(r"^(?:a|\d)") is None
    assert any_of_literals(r"(?i)^abc") is None


@pytest.mark.parametrize("kind", ["starts", "texts"])
def test_every_string_a_rule_matches_is_inside_its_gate(packs: PackSet, kind: str) -> None:
    # GIVEN each shipped rule the stdlib runs, with the starts or the texts its gate reads from its regex
    gated = []
    for rule in packs.rules:
        if rule.pattern.timeout is not None:
            continue
        facts = start_characters(rule.pattern.text, rule.pattern.ignore_case) if kind == "starts" else None
        texts = any_of_literals(rule.pattern.text) if kind == "texts" and not rule.pattern.ignore_case else None
        if facts is not None or texts is not None:
            gated.append((rule, facts, texts))
    assert gated

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        rule, starts, texts = data.draw(st.sampled_from(gated))
        flags = re.IGNORECASE if rule.pattern.ignore_case else 0
        # WHEN hypothesis writes a string the rule's regex matches
        text = data.draw(st.from_regex(re.compile(rule.pattern.text, flags)))
        found = re.search(rule.pattern.text, text, flags)
        assume(found is not None)
        # THEN its lower-cased first character is a start of the gate (or not ASCII), or it holds one of the texts
        if starts is not None:
            first = text.lower()[:1]
            assert not first.isascii() or first in starts, (rule.id, text)
        if texts is not None:
            assert any(piece in text for piece in texts), (rule.id, text)

    check()


INSERTED = ["0", "9", " ", "[", "]", "K", "ſ", "İ", "é", ":", "x"]


def _lines(packs: PackSet) -> st.SearchStrategy[str]:
    """Lines made of the packs' own examples: a prefix example's head and a rule example's message, cut,
    re-cased, and with characters (ASCII, a Kelvin sign, a long s, a dotted I) put in."""
    heads = sorted({example for prefix in packs.prefixes for example in prefix.examples})
    messages = sorted({example for rule in packs.rules for example in rule.examples})

    @st.composite
    def line(draw: st.DrawFn) -> str:
        head = draw(st.sampled_from(heads))
        head = head[: draw(st.integers(0, len(head)))]
        message = draw(st.sampled_from(messages))
        _, message = packs.split_prefix(message)
        text = head + draw(st.sampled_from(["", " "])) + message
        for _ in range(draw(st.integers(0, 3))):
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(INSERTED)) + text[at:]
        if draw(st.booleans()):
            text = text.swapcase() if draw(st.booleans()) else text.lower()
        return text

    return line()


def test_the_selection_picks_what_every_prefix_and_rule_in_order_pick(packs: PackSet) -> None:
    lines = _lines(packs)

    @settings(max_examples=800, deadline=None, suppress_health_check=list(HealthCheck))
    @given(text=lines)
    def check(text: str) -> None:
        # GIVEN a line made of the packs' own examples, changed
        # WHEN it is split and its candidate rules are picked
        fields, message = packs.split_prefix(text)
        candidates = packs.candidate_rules(message.lower())
        # THEN the split is the one every prefix tried in order gives, and the rules that match it among the
        # candidates are those that match it among all rules, in the same order
        assert (fields, message) == reference_split(packs, text)
        assert matching(candidates, message, fields.prefixes) == matching(packs.rules, message, fields.prefixes)

    check()
