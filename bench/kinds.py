"""Line kinds for the rule-dominant bench: each rule's examples, each inventory template's line, restamped, renumbered.

A kind is the lines one rule reads (its examples) or one group of inventory templates (the lines
synthesised as the coverage test does, logphase/inventory/synthesis.py): templates that the same
rule reads, of one system and call kind, holding the same candidate literals, steady factors and
triggers of the scan plan, take the same way through the fast path, so one of each group stands
for it. `dominant_lines` interleaves a kind's lines, half of all, with a seeded mix of serving
lines (bench/shapes.py), every line with a fresh stamp from one clock and fresh numbers.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from bench.shapes import SGLANG_05, VLLM, Shape, restamp, serving, variants
from logphase.logs.fast.plan import is_steady
from logphase.packs import PackSet


@dataclass(frozen=True)
class Kind:
    """Lines of one kind: `name` (a rule id, or `inventory:` + the template's place), the lines,
    and the serving format the rest of its log is drawn from."""

    name: str
    lines: tuple[str, ...]
    shape: Shape
    # its rule makes an event the timeline counts (not a steady mark): each of its lines is read by design
    read_by_design: bool = False


SGLANG_SERVING = Shape(SGLANG_05)
VLLM_SERVING = Shape(VLLM(v1=True), startup=False)


def background(system: str) -> Shape:
    return VLLM_SERVING if system == "vllm" else SGLANG_SERVING


def rule_kinds(packs: PackSet) -> list[Kind]:
    """One kind per rule with examples: its examples' first lines."""
    kinds = []
    for rule in packs.rules:
        lines = tuple(dict.fromkeys(example.split("\n", 1)[0] for example in rule.examples if example.strip()))
        if lines:
            kinds.append(Kind(rule.id, lines, background(rule.system or ""), not is_steady(rule)))
    return kinds


def inventory_kinds(packs: PackSet) -> list[Kind]:
    """One kind per group of inventory templates that the fast path tells apart the same way."""
    from logphase.frames import TRIGGER
    from logphase.inventory.coverage import decide
    from logphase.inventory.files import builtin_inventory_dir, read_inventory
    from logphase.logs.fast import plan_for

    plan = plan_for(packs, (TRIGGER,))
    triggers = [re.compile(trigger) for trigger in plan.triggers]
    groups: dict[tuple[object, ...], Kind] = {}
    for entry in read_inventory(builtin_inventory_dir()):
        decision = decide(entry, packs)
        raw = decision.line.encode()
        lower = raw.lower()
        key = (
            decision.rule.id if decision.rule else None,
            entry.system,
            entry.kind,
            frozenset(f.text for f in plan.candidates if (f.text.lower() in lower if f.caseless else f.text in raw)),
            frozenset(factor for factor in plan.steady if factor in raw),
            frozenset(index for index, trigger in enumerate(triggers) if trigger.search(raw)),
        )
        if key not in groups:
            name = f"inventory:{entry.system}:{entry.file.rsplit('/', 1)[-1]}:{entry.line}"
            by_design = decision.rule is not None and not is_steady(decision.rule)
            groups[key] = Kind(name, (decision.line,), background(entry.system), by_design)
    return list(groups.values())


def dominant_lines(kind: Kind, packs: PackSet, seed: int, count: int) -> Iterator[str]:
    """About `count` lines: half the kind's, drawn at random from its (renumbered) lines, half its
    background's serving lines, interleaved at random; the SGLang startup first where the background
    has one; every line stamped by one clock."""
    from bench.loggen import LogGenerator

    r = random.Random(seed)
    pool = [variant for line in kind.lines for variant in variants(line, packs, r)]
    generator = LogGenerator(seed)
    head = list(generator.startup()) if kind.shape.startup else []
    yield from head
    share = 0.5 if pool else 0.0  # a kind of no lines: the background alone
    for now, other in islice(serving(kind.shape, r, generator.clock.now), count - len(head)):
        yield restamp(r.choice(pool), now) if r.random() < share else other
