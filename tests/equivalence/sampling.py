"""Sampling the dimensions of "the same answer under X" instead of crossing them in full.

A run draws its rows with one seed: `LOGPHASE_TEST_SEED` when set (to replay a failing run), else a new
one per run, printed in pytest's header and in every sampled test's id list. `covering_rows` fills the
rows given (every corpus log, a bare layout for each) so that every value of every dimension appears
and every pair of values of two dimensions other than the log appears at least once in the run (a
pairwise covering array, built greedily), plus the pairs of each log with each value of the dimensions
named in `log_pairs`. What a run does not cross (a log with every layout, a log with every command) it
samples afresh the next run, so the full cross is covered over runs; `LOGPHASE_TEST_FULL=1` crosses it
in one run.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import TypeVar

Row = dict[str, str]
T = TypeVar("T")
U = TypeVar("U")
Pair = tuple[tuple[str, str], tuple[str, str]]

SEED = int(os.environ.get("LOGPHASE_TEST_SEED") or time.time_ns() % 1_000_000)
FULL = os.environ.get("LOGPHASE_TEST_FULL", "") not in ("", "0")


def rng(name: str) -> random.Random:
    """The run's random choices for one sampled test: the run's seed and the test's name."""
    return random.Random(f"{SEED}|{name}")


def _pair(a: tuple[str, str], b: tuple[str, str]) -> Pair:
    return (a, b) if a < b else (b, a)


def pairs_of(row: Mapping[str, str], key: str) -> set[Pair]:
    """The pairs of values a row covers, leaving out the pairs of the `key` dimension (the log) but
    those with the `log_pairs` dimensions, which the caller asks for by name."""
    items = sorted(row.items())
    return {_pair(a, b) for a, b in combinations(items, 2)}


def wanted_pairs(
    dimensions: Mapping[str, Sequence[str]],
    allowed: Callable[[Mapping[str, str]], bool],
    key: str,
    keys: Sequence[str],
    log_pairs: Sequence[str],
) -> set[Pair]:
    """Every pair of values of two dimensions other than `key` that some row may hold, and every pair
    of a `key` value with a value of a `log_pairs` dimension."""
    wanted: set[Pair] = set()
    for first, second in combinations(sorted(dimensions), 2):
        for a in dimensions[first]:
            for b in dimensions[second]:
                if allowed({first: a, second: b}):
                    wanted.add(_pair((first, a), (second, b)))
    for name in log_pairs:
        for k in keys:
            for value in dimensions[name]:
                if allowed({key: k, name: value}):
                    wanted.add(_pair((key, k), (name, value)))
    return wanted


def covering_rows(
    seeds: Sequence[Row],
    dimensions: Mapping[str, Sequence[str]],
    *,
    key: str,
    log_pairs: Sequence[str] = (),
    allowed: Callable[[Mapping[str, str]], bool] = lambda row: True,
    random_: random.Random,
    tries: int = 32,
) -> list[Row]:
    """The rows, each seed completed with a value of every dimension it lacks, so that together they
    cover `wanted_pairs`; rows are added (on a randomly chosen `key` value) while some pair is left.
    `allowed` tells a partial row that breaks a constraint (it is asked of every partial row)."""
    keys = sorted({seed[key] for seed in seeds})
    left = wanted_pairs(dimensions, allowed, key, keys, log_pairs)
    names = sorted(dimensions)

    def complete(seed: Row) -> Row:
        best: Row | None = None
        best_gain = -1
        for _ in range(tries):
            row = dict(seed)
            for name in random_.sample(names, len(names)):
                if name in row:
                    continue
                choices = [v for v in dimensions[name] if allowed({**row, name: v})]
                random_.shuffle(choices)
                row[name] = max(choices, key=lambda v: _score({**row, name: v}, left, key))
            gain = _score(row, left, key)
            if gain > best_gain:
                best, best_gain = row, gain
        assert best is not None
        return best

    rows: list[Row] = []
    for seed in seeds:
        row = complete(seed)
        left -= _gain(row, left, key, log_pairs)
        rows.append(row)
    while left:
        # a pair no row holds yet: a row made for it, on a log the pair names or a random one
        (a, b) = min(left)
        seed = dict([a, b])
        seed.setdefault(key, random_.choice(keys))
        row = complete(seed)
        left -= _gain(row, left, key, log_pairs)
        rows.append(row)
    return rows


def _gain(row: Mapping[str, str], left: set[Pair], key: str, log_pairs: Sequence[str]) -> set[Pair]:
    return {pair for pair in pairs_of(row, key) if pair in left}


def _score(row: Mapping[str, str], left: set[Pair], key: str) -> int:
    """The pairs a row would cover, a pair with its `key` value counting most: a log has few rows to
    take each value in, the other pairs many."""
    return sum(10 if key in (a[0], b[0]) else 1 for a, b in pairs_of(row, key) if (a, b) in left)


def row_id(row: Mapping[str, str], order: Sequence[str]) -> str:
    return "|".join(row[name] for name in order)


def drawn(name: str, items: Sequence[T], count: int) -> list[T]:
    """`count` of the items, drawn afresh each run (all of them with FULL), in their order."""
    if FULL or count >= len(items):
        return list(items)
    chosen = set(rng(name).sample(range(len(items)), count))
    return [item for index, item in enumerate(items) if index in chosen]


def dealt(name: str, items: Sequence[T], values: Sequence[U]) -> list[tuple[T, U]]:
    """Each item with one of the values, dealt in turn from a drawn order so that every value is
    dealt when there are as many items (every item with every value with FULL)."""
    if FULL:
        return [(item, value) for item in items for value in values]
    order = [*values] * (len(items) // len(values) + 1)
    rng(name).shuffle(order)
    return list(zip(items, order, strict=False))
