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
from logphase.watch.ingest import Ingest
from tests.conftest import FIXTURES, REALWORLD
from tests.test_fast_cliffs import prefill_run_with_mixed_batches

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


def test_a_held_line_its_rule_does_not_match_leaves_the_runs_last_mark_where_reading_every_line_does(
    tmp_path: Path, packs: PackSet
) -> None:
    # GIVEN a serving SGLang rank whose decode batches form a steady run, and a last line of the batch
    # that holds every string the rule needs but is none of its events (`#running-req:` without a count)
    decode = "[2026-01-01 10:00:{s:02d} TP0] Decode batch. #running-req: {n}, #token: 1200, token usage: 0.01, "
    decode += "gen throughput (token/s): 51.20, #queue-req: 0"
    lines = [
        "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.12 GB",
        "[2026-01-01 10:00:01 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB",
        "[2026-01-01 10:00:02] The server is fired up and ready to roll!",
    ]
    lines += [decode.format(s=3 + i, n=1 + i % 3) for i in range(12)]
    lines.append(decode.format(s=20, n="?"))
    path = tmp_path / "serving.log"
    path.write_text("\n".join(lines) + "\n")
    # WHEN it is followed in batches of four lines (the last batch: lines 13-16, held back once the run's
    # template is known), with steady runs summarised and without
    fast = assert_same_watch(path, packs, 4)
    # THEN the timeline is the same: the run's last mark is its last event, line 15, not the line before
    # the lines held back
    assert fast.skipped_lines > 0
    assert max(span.end_line or 0 for span in fast.timeline().spans) == 15


def test_access_lines_another_steady_rule_wins_are_held_back_as_its_run(tmp_path: Path, packs: PackSet) -> None:
    # GIVEN a ready SGLang server whose traffic is `POST /generate` (uvicorn's access line inside SGLang's
    # prefix): each line holds the access rule's ` HTTP/` and the warmup request's factor, and the warmup
    # rule, earlier in priority, wins it
    access = '[2026-01-01 10:{m:02d}:{s:02d}] INFO:     10.0.0.{n}:4{n:04d} - "POST /generate HTTP/1.1" 200 OK'
    lines = [
        "[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=78.12 GB",
        "[2026-01-01 10:00:01 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.1 GB",
        "[2026-01-01 10:00:02] The server is fired up and ready to roll!",
    ]
    lines += [access.format(m=1 + i // 60, s=i % 60, n=i % 200) for i in range(600)]
    # ... then 600 `GET /health` 200 probes: the health rule's, though they hold the 503 rule's factor too
    health = '[2026-01-01 10:{m:02d}:{s:02d}] INFO:     127.0.0.1:5{n:04d} - "GET /health HTTP/1.1" 200 OK'
    lines += [health.format(m=11 + i // 60, s=i % 60, n=i % 200) for i in range(600)]
    path = tmp_path / "serving.log"
    path.write_text("\n".join(lines) + "\n")
    # WHEN it is followed in batches of 50 lines, with steady runs summarised and without
    fast = assert_same_watch(path, packs, 50)
    # THEN the same state, and the lines after each run's first two in each batch were held back
    assert fast.skipped_lines > 1000


@pytest.mark.parametrize("size", [7, 400])
def test_a_line_that_only_holds_an_anchored_rules_strings_is_not_held_in_its_run(
    tmp_path: Path, packs: PackSet, size: int
) -> None:
    # GIVEN an SGLang log of decode batches where every 40th line is a prefill batch (the prefill mark's steady
    # run) and two in 20 a mixed prefill batch (`Prefill batch(mixed`: it holds every string the mark's
    # `^Prefill batch[.,]` needs and fails it right after its literal; no rule's)
    # (tests/test_fast_cliffs.py, without its candidate lines: the runs are held across whole batches)
    path = tmp_path / "mixed.log"
    path.write_text(prefill_run_with_mixed_batches(2000, loads=False))
    # WHEN it is followed in batches with and without the summary
    # THEN (assert_same_watch) the state matches after every batch: no mixed line counted as the mark's
    assert_same_watch(path, packs, size)
