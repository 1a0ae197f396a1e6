"""A line that ends a sequence of start-up steps closes the step its rank was in: a step the server skipped
(CUDA graphs disabled) is not claimed (pack key `closes_from`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_json

# SGLang 0.4–0.5 model_runner / scheduler lines (shared/reference, sglang §2.1), an untagged TP1 server
WEIGHTS_AND_POOL = (
    "[2025-08-04 10:10:06] Load weight begin. avail mem=78.84 GB\n"
    "[2025-08-04 10:10:08] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=77.66 GB, "
    "mem usage=1.18 GB.\n"
    "[2025-08-04 10:10:08] KV Cache is allocated. #tokens: 30192, K size: 1.38 GB, V size: 1.38 GB\n"
    "[2025-08-04 10:10:08] Memory pool end. avail mem=74.76 GB\n"
)
CAPTURE = (
    "[2025-08-04 10:10:08] Capture cuda graph begin. This can take up to several minutes. avail mem=74.70 GB\n"
    "[2025-08-04 10:10:20] Capture cuda graph end. Time elapsed: 11.92 s. mem usage=0.41 GB. avail mem=74.29 GB.\n"
)
INIT_DONE = (
    "[2025-08-04 10:10:21] max_total_num_tokens=30192, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=2049, context_len=32768, available_gpu_mem=74.29 GB\n"
)


@pytest.mark.parametrize(
    ("text", "furthest"),
    [
        (WEIGHTS_AND_POOL + INIT_DONE, "kv_cache"),  # --disable-cuda-graph: no capture ran
        (WEIGHTS_AND_POOL + CAPTURE + INIT_DONE, "cuda_graph"),
        (INIT_DONE, "cuda_graph"),  # a fragment: whatever ran before, the scheduler's init is over
    ],
    ids=["graphs-disabled", "graphs-captured", "fragment"],
)
def test_scheduler_init_done_closes_the_step_the_rank_was_in(tmp_path: Path, text: str, furthest: str) -> None:
    # GIVEN an SGLang start-up that ends with the scheduler's `max_total_num_tokens=` line
    log = tmp_path / "server.log"
    log.write_text(text)
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN the furthest phase is the step that line closed: the capture only where one began
    assert report["furthest_phase"] == furthest
