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
        # a fragment: the scheduler's init is over, but no line shows a capture began: the KV pool is what it proves
        (INIT_DONE, "kv_cache"),
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


def test_a_tagged_rank_in_docker_closes_its_own_step(tmp_path: Path) -> None:
    # GIVEN the graphs-disabled start of TP0 and TP1 (each line tagged), as `docker logs -t` hands it over
    tagged = "".join(
        line.replace("] ", f" TP{rank}] ", 1)
        for line in (WEIGHTS_AND_POOL + INIT_DONE).splitlines(keepends=True)
        for rank in (0, 1)
    )
    log = tmp_path / "docker.log"
    log.write_text(
        "".join(f"2025-08-04T10:10:{i:02d}.000000000Z {line}" for i, line in enumerate(tagged.splitlines(True)))
    )
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN each rank's scheduler line closed its KV pool: no capture is claimed
    assert report["furthest_phase"] == "kv_cache"
