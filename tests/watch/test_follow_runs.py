"""Watch's summary of steady runs (logs/fast/follow.py FollowRuns) leaves the state it would reach
reading every line: the same timeline after every batch, and the same observations."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from bench.loggen import write_log
from logphase.judging.budgets import Budgets
from logphase.logs.reader import Line, LogSource, read_lines
from logphase.packs import PackSet
from logphase.watching import Ingest
from tests.conftest import FIXTURES, REALWORLD

REFERENCE = datetime(2030, 1, 1)
LOGS = sorted(p for p in (FIXTURES / "logs").glob("*/*.log") if not p.name.endswith(".part.log"))
LOGS += sorted((REALWORLD / "logs").glob("*.log"))
LOGS += sorted((FIXTURES / "real").glob("*/*.log"))


def batches(path: Path, size: int) -> Iterator[list[Line]]:
    source = LogSource(path.name, lambda: path.open("rb"))
    batch: list[Line] = []
    for line in read_lines(source):
        batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def assert_same_watch(path: Path, packs: PackSet, size: int) -> Ingest:
    fast, full = Ingest(packs, REFERENCE), Ingest(packs, REFERENCE, fast=False)
    assert fast.runs is not None and full.runs is None
    for number, batch in enumerate(batches(path, size)):
        for ingest in (fast, full):
            ingest.feed(batch, arrived=float(number))
        # THEN after every batch: the same timeline, observation and counts
        assert fast.timeline() == full.timeline(), f"{path.name}: batch {number}"
        seen_fast, seen_full = (
            fast.observe(number, since=0.0, budgets=Budgets()),
            full.observe(number, since=0.0, budgets=Budgets()),
        )
        assert seen_fast == seen_full
    fast.end()
    full.end()
    assert fast.timeline() == full.timeline()
    assert (fast.lines, fast.last_line, fast.log_time) == (full.lines, full.last_line, full.log_time)
    return fast


@pytest.mark.slow
@pytest.mark.parametrize("size", [3, 400])
@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_watch_state_is_the_same_with_steady_runs_summarised(path: Path, size: int, packs: PackSet) -> None:
    # GIVEN a fixture log fed to watch's ingest in batches of `size` lines, with and without the summary
    # WHEN / THEN (assert_same_watch) the state matches after every batch
    assert_same_watch(path, packs, size)


@pytest.mark.slow
@pytest.mark.parametrize("size", [50, 2000])
def test_a_serving_log_is_summarised_and_judged_the_same(
    tmp_path: Path, packs: PackSet, scanner: str, size: int
) -> None:
    # GIVEN a generated TP8 server log: NCCL INFO init, startup, serving batches and access lines, a crash
    path = write_log(tmp_path / "serving.log", 3 << 20)
    # WHEN it is followed in batches
    fast = assert_same_watch(path, packs, size)
    # THEN the same state, and most steady lines were never read by the matcher
    assert fast.runs is not None
    assert fast.builder.events > 0
    total = sum(1 for _ in path.open("rb"))
    assert fast.skipped_lines > total * 0.8
