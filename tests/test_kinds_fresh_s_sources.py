"""Lines the fresh-s batch left unread or misplaced, each written from the format its system prints in the released
source the pack's rule cites: SGLang 0.1.x's per-rank load and memory-pool lines."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def test_sglang_01_pool_sizing_line_places_kv_cache_after_the_weights(tmp_path: Path) -> None:
    # GIVEN sglang 0.1.x's router/model_runner.py `Rank {tp_rank}: load weight begin.` / `... end.` on two ranks,
    # then model_rpc.py's `Rank {tp_rank}: max_total_num_token=..., max_prefill_num_token=..., context_len=..., `
    # (logged once init_memory_pool sized the pool), and nothing after it
    text = (
        "Rank 0: load weight begin.\n"
        "Rank 1: load weight begin.\n"
        "Rank 1: load weight end.\n"
        "Rank 0: load weight end.\n"
        "Rank 1: max_total_num_token=98304, max_prefill_num_token=16384, context_len=8192, \n"
        "Rank 0: max_total_num_token=98304, max_prefill_num_token=16384, context_len=8192, \n"
    )
    report = judge_text(tmp_path, text)
    # WHEN judged post-mortem THEN both ranks got past the weights to the pool, the later pool line the one quoted
    assert report["phase"] == "kv_cache"
    assert report["verdict"] == "stalled"
    assert root_text(report) == "Rank 0: max_total_num_token=98304, max_prefill_num_token=16384, context_len=8192, "


def test_sglang_01_load_begin_alone_is_weight_load(tmp_path: Path) -> None:
    # GIVEN only 0.1.x's `Rank 0: load weight begin.`
    report = judge_text(tmp_path, "Rank 0: load weight begin.\n")
    # WHEN judged THEN the rank was loading its weights
    assert report["phase"] == "weight_load"
