"""Two steady rules that share their literal (SGLang's warmup and traffic `Prefill batch` marks) are both summarised
by the fast scan, and it gives the same report as reading every line (logs/fast/plan.py `Plan.steady`)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from logphase import scan as scanning
from logphase.frames import TRIGGER
from logphase.logs.fast import plan_for
from logphase.logs.fast.plan import read_one_by_one
from logphase.packs import PackSet
from tests.equivalence import reports as reports_

TRAFFIC = "sglang.serving.prefill_batch_traffic"
WARMUP = "sglang.serving.prefill_batch"

# SGLang 0.4.x's scheduler lines (scheduler.py `log_prefill_stats` / `log_decode_stats`) and its uvicorn access line,
# each after the server's own `[stamp TPn] ` prefix; a prefill of one new sequence, no cached token, nothing running or
# queued is what the warmup's request prints (the warmup rule's), any other the traffic's.
HEAD = [
    "[2025-03-08 12:00:01] server_args=ServerArgs(model_path='Qwen/Qwen2-7B', tp_size=2)",
    "[2025-03-08 12:00:02 TP0] Load weight begin. avail mem=77.00 GB",
    "[2025-03-08 12:00:02 TP1] Load weight begin. avail mem=77.00 GB",
    "[2025-03-08 12:00:09 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=62.50 GB",
    "[2025-03-08 12:00:09 TP1] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=62.50 GB",
    "[2025-03-08 12:00:10] INFO:     Started server process [1234]",
    "[2025-03-08 12:00:10] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "[2025-03-08 12:00:11 TP0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0, ",
    "[2025-03-08 12:00:11 TP1] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
    "#running-req: 0, #queue-req: 0, ",
    '[2025-03-08 12:00:12] INFO:     127.0.0.1:40000 - "POST /generate HTTP/1.1" 200 OK',
    "[2025-03-08 12:00:12] The server is fired up and ready to roll!",
]


def serving_lines(rows: int, seed: int) -> list[str]:
    """A TP2 server's traffic: both ranks' prefills of either kind, decode batches and access lines, interleaved."""
    rng = random.Random(seed)
    lines = list(HEAD)
    for row in range(rows):
        stamp = f"2025-03-08 12:{1 + row // 600:02d}:{row // 10 % 60:02d}"
        for rank in (0, 1):
            head = f"[{stamp} TP{rank}] "
            if rng.random() < 0.3:  # a lone request into an idle server: the warmup's shape
                counts = f"#new-seq: 1, #new-token: {rng.randint(5, 900)}, #cached-token: 0, token usage: 0.00, "
                queue = "#running-req: 0, #queue-req: 0, "
            else:
                counts = f"#new-seq: {rng.randint(2, 9)}, #new-token: {rng.randint(64, 8192)}, "
                counts += f"#cached-token: {rng.randint(0, 4000)}, token usage: 0.0{rng.randint(1, 9)}, "
                queue = f"#running-req: {rng.randint(0, 30)}, #queue-req: {rng.randint(0, 5)}, "
            lines.append(head + "Prefill batch. " + counts + queue)
            decode = f"#running-req: {rng.randint(1, 40)}, #token: {rng.randint(100, 9000)}, "
            decode += f"token usage: 0.0{rng.randint(1, 9)}, gen throughput (token/s): {rng.uniform(100, 900):.2f}, "
            lines.append(head + "Decode batch. " + decode + "#queue-req: 0, ")
        peer = f"10.0.0.{rng.randint(2, 250)}:{rng.randint(1024, 65000)}"
        lines.append(f'[{stamp}] INFO:     {peer} - "POST /generate HTTP/1.1" 200 OK')
    return lines


def test_the_two_prefill_marks_share_one_steady_factor_and_neither_is_read_one_by_one(packs: PackSet) -> None:
    # GIVEN the shipped packs, whose two SGLang prefill marks need the same literal
    # WHEN their scan plan is made
    plan = plan_for(packs, (TRIGGER,))
    # THEN the literal is a steady factor of both, the traffic's first (its priority wins a line both match), and
    # `patterns test` names neither as read one by one
    assert [rule.id for rule in plan.steady[b"Prefill batch"]] == [TRAFFIC, WARMUP]
    costly = {rule.id for rule, _ in read_one_by_one(packs, plan)}
    assert costly.isdisjoint({TRAFFIC, WARMUP})


@pytest.mark.slow
@pytest.mark.parametrize("envelope", ["", "2025-03-08T12:00:00.000000001Z stdout F "])
def test_a_serving_log_of_both_prefill_kinds_is_summarised_and_read_the_same(
    tmp_path: Path, packs: PackSet, captured: list[Any], monkeypatch: pytest.MonkeyPatch, envelope: str
) -> None:
    # GIVEN a TP2 SGLang server's log, after its warmup and ready line both ranks prefilling batches of either
    # prefill kind, decoding and answering requests (bare, and as CRI writes it)
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)  # the fast path from the second line on
    log = tmp_path / "sglang-serving.log"
    lines = serving_lines(1500, 20261204)
    log.write_text("".join(f"{envelope}{line}\n" for line in lines))
    # WHEN it is analysed with and without the fast path
    plain = reports_.plain([log], packs)
    fast = reports_.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a fifth of its lines: each prefill kind's runs
    # are summarised, not read line by line
    assert fast == plain
    stats = captured[-1].stats
    assert stats.lines == len(lines)
    assert stats.emitted * 5 < stats.lines
