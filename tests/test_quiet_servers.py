"""A serving server that goes quiet: ready and idle, or stopped while it held requests. Written from the servers'
own stats lines, each of which counts the requests the server holds: vLLM's `Running: N reqs, Waiting: N reqs`
(v1/metrics/loggers.py, every VLLM_LOG_STATS_INTERVAL = 10 s and at INFO after any interval with tokens; V0's
engine/metrics.py every 5 s from the engine's step), SGLang's `Decode batch … #queue-req: N` (a queued request is
admitted by a prefill, which prints its `Prefill batch` line; scheduler_metrics_mixin.py), and the TensorRT-LLM
Triton backend's iteration stats `{"Active Request Count":N,…}` (model_instance_state.cc, one per executor
iteration). And vLLM's sleep mode: an engine put to sleep serves nothing until it is woken."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import judge_text, root_text, run_json

# --- vLLM V1 behind `docker logs -t` (each line stamped by the envelope, health probes included) -------------------

_VLLM_START = (
    "2025-11-24T11:45:50.100000000Z (APIServer pid=1) INFO 11-24 11:45:50 [api_server.py:1971] Starting vLLM API"
    " server 0 on http://0.0.0.0:8000\n"
    "2025-11-24T11:45:50.200000000Z (APIServer pid=1) INFO:     Started server process [1]\n"
    "2025-11-24T11:45:50.200000000Z (APIServer pid=1) INFO:     Waiting for application startup.\n"
    "2025-11-24T11:45:50.300000000Z (APIServer pid=1) INFO:     Application startup complete.\n"
    '2025-11-24T11:45:58.000000000Z (APIServer pid=1) INFO:     10.0.0.5:51234 - "POST /v1/chat/completions'
    ' HTTP/1.1" 200 OK\n'
    "2025-11-24T11:46:00.000000000Z (APIServer pid=1) INFO 11-24 11:46:00 [loggers.py:124] Engine 000: Avg prompt"
    " throughput: 412.3 tokens/s, Avg generation throughput: 96.1 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV"
    " cache usage: 1.2%, Prefix cache hit rate: 0.0%\n"
)


def _vllm_stats(running: int, waiting: int) -> str:
    return (
        "2025-11-24T11:46:10.000000000Z (APIServer pid=1) INFO 11-24 11:46:10 [loggers.py:124] Engine 000: Avg prompt"
        f" throughput: 0.0 tokens/s, Avg generation throughput: 120.4 tokens/s, Running: {running} reqs, Waiting:"
        f" {waiting} reqs, GPU KV cache usage: 1.3%, Prefix cache hit rate: 0.0%\n"
    )


def _vllm_probes(minutes: int) -> str:
    """Kubernetes' health probes after the stats line, every minute for `minutes` minutes (the envelope's stamps)."""
    return "".join(
        f"2025-11-24T{11 + (46 + m) // 60:02d}:{(46 + m) % 60:02d}:10.000000000Z (APIServer pid=1) INFO:"
        f'     10.0.0.9:{40000 + m} - "GET /health HTTP/1.1" 200 OK\n'
        for m in range(1, minutes + 1)
    )


def test_vllm_stats_holding_requests_then_only_probes_for_half_an_hour_is_stalled(tmp_path: Path) -> None:
    # GIVEN a vLLM server whose last stats line counts 3 running requests, then only health probes for 30 minutes
    # (the stats line is owed every 10 s while the requests last)
    report = judge_text(tmp_path, _VLLM_START + _vllm_stats(3, 0) + _vllm_probes(30))
    # THEN it stopped while it held them: stalled at serving, the stats line the cause
    assert (report["verdict"], report["phase"]) == ("stalled", "serving")
    assert root_text(report).endswith(
        "Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.3%, Prefix cache hit rate: 0.0%"
    )
    assert report["root_cause"]["line"] == 7
    words = "the server stopped reporting while it held 3 requests: no stats line for 30m00s"
    assert report["reason"].startswith(words)


def test_vllm_stats_with_nothing_held_then_probes_is_ready_and_idle(tmp_path: Path) -> None:
    # GIVEN the same server whose last stats line counts no request, running or waiting, then the same probes
    report = judge_text(tmp_path, _VLLM_START + _vllm_stats(0, 0) + _vllm_probes(30))
    # THEN an idle server: ready (its ready line)
    assert (report["verdict"], report["phase"]) == ("ready", "serving")


def test_vllm_log_that_ends_at_a_stats_line_holding_requests_is_ready(tmp_path: Path) -> None:
    # GIVEN a log that ends at a stats line that counts running requests: no silence after it to measure
    report = judge_text(tmp_path, _VLLM_START + _vllm_stats(3, 2))
    # THEN a busy server: ready, not a stall
    assert report["verdict"] == "ready"


def test_vllm_request_answered_after_the_stats_line_owes_nothing_more(tmp_path: Path) -> None:
    # GIVEN the stats line holding 3 requests, then one answered (its access line), then the probes
    answered = (
        '2025-11-24T11:46:12.000000000Z (APIServer pid=1) INFO:     10.0.0.5:51240 - "POST /v1/chat/completions'
        ' HTTP/1.1" 200 OK\n'
    )
    report = judge_text(tmp_path, _VLLM_START + _vllm_stats(3, 0) + answered + _vllm_probes(30))
    # THEN the server moved after the stats line: ready
    assert report["verdict"] == "ready"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(running=st.integers(0, 64), waiting=st.integers(0, 64), minutes=st.sampled_from([1, 3, 40, 59]))
def test_vllm_quiet_after_stats_is_stalled_only_when_it_held_requests_and_the_silence_is_long(
    tmp_path: Path, running: int, waiting: int, minutes: int
) -> None:
    # GIVEN any counts on the last stats line and probes for 1 to 59 minutes after it
    report = judge_text(tmp_path, _VLLM_START + _vllm_stats(running, waiting) + _vllm_probes(minutes))
    # THEN stalled exactly where it held a request and went quiet past the default serving budget (15 minutes)
    held = running + waiting > 0
    assert report["verdict"] == ("stalled" if held and minutes > 15 else "ready")


# --- SGLang: Decode batch lines, a queue that never drains -------------------------------------------------------

_SGLANG_START = (
    "[2025-03-08 12:29:20] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
    "[2025-03-08 12:29:30 TP0] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00,"
    " #running-req: 0, #queue-req: 0, \n"
    '[2025-03-08 12:29:31] INFO:     127.0.0.1:40702 - "POST /generate HTTP/1.1" 200 OK\n'
    "[2025-03-08 12:29:31] The server is fired up and ready to roll!\n"
    "[2025-03-08 12:30:00 TP0] Prefill batch. #new-seq: 8, #new-token: 4096, #cached-token: 0, token usage: 0.02,"
    " #running-req: 0, #queue-req: 4, \n"
)
_SGLANG_PROBES = "".join(
    f'[2025-03-08 12:{m:02d}:01] INFO:     10.0.0.7:{51000 + m} - "GET /health HTTP/1.1" 200 OK\n'
    for m in range(35, 60, 5)
)


def _decode(queued: int) -> str:
    return (
        "[2025-03-08 12:30:01 TP0] Decode batch. #running-req: 8, #token: 4352, token usage: 0.02, gen throughput"
        f" (token/s): 812.40, #queue-req: {queued}, \n"
    )


def test_sglang_decode_line_with_a_queue_then_half_an_hour_of_probes_is_stalled(tmp_path: Path) -> None:
    # GIVEN SGLang's decode line with 4 requests queued (each owes a `Prefill batch` line when admitted), then only
    # health probes for 29 minutes
    report = judge_text(tmp_path, _SGLANG_START + _decode(4) + _SGLANG_PROBES)
    # THEN stalled at serving, the decode line the cause
    assert (report["verdict"], report["phase"]) == ("stalled", "serving")
    assert report["root_cause"]["line"] == 6
    assert "held 4 requests" in report["reason"]


def test_sglang_decode_line_with_running_requests_only_is_an_idle_server(tmp_path: Path) -> None:
    # GIVEN the same decode line with an empty queue: its 8 running requests may finish inside the next 40 decode
    # steps, which print no line (`--decode-log-interval`), so an idle server's last line shows them
    report = judge_text(tmp_path, _SGLANG_START + _decode(0) + _SGLANG_PROBES)
    # THEN ready
    assert report["verdict"] == "ready"


# --- the TensorRT-LLM backend's iteration stats, judged live ------------------------------------------------------

_TRT = (
    'I0514 21:01:55.276668 160 model_instance_state.cc:813] {"Active Request Count":1,"Iteration Counter":110579,'
    '"Max Request Count":1,"Runtime CPU Memory Usage":404,"Timestamp":"05-14-2024 21:01:55","Context Requests":0,'
    '"Generation Requests":1,"MicroBatch ID":0,"Paused Requests":0,"Scheduled Requests":1}\n'
    'I0514 21:01:55.284479 160 model_instance_state.cc:813] {"Active Request Count":1,"Iteration Counter":110580,'
    '"Max Request Count":1,"Runtime CPU Memory Usage":404,"Timestamp":"05-14-2024 21:01:55","Context Requests":0,'
    '"Generation Requests":1,"MicroBatch ID":0,"Paused Requests":0,"Scheduled Requests":1}\n'
)


def _live(tmp_path: Path, as_of: str) -> dict[str, object]:
    log = tmp_path / "triton.log"
    log.write_text(_TRT)
    written = datetime(2024, 5, 14, 21, 1, 56).timestamp()  # the file's last write: just after its last line
    os.utime(log, (written, written))
    _, report = run_json("analyze", "--as-of", as_of, str(log))
    return report


def test_trtllm_iteration_stats_with_an_active_request_quiet_for_38_minutes_live_is_stalled(tmp_path: Path) -> None:
    # GIVEN the backend's iteration stats with one active request, the file last written at 21:01:56
    # WHEN judged live at 21:40 (no iteration logged since)
    report = _live(tmp_path, "2024-05-14 21:40:00")
    # THEN the executor stopped stepping while it held the request: stalled at serving
    assert (report["verdict"], report["phase"]) == ("stalled", "serving")
    assert "held 1 request:" in str(report["reason"])


def test_trtllm_iteration_stats_with_an_active_request_quiet_for_a_minute_live_is_ready(tmp_path: Path) -> None:
    # WHEN judged live a minute after its last write
    report = _live(tmp_path, "2024-05-14 21:03:00")
    # THEN within the budget: the server serves
    assert report["verdict"] == "ready"


# --- vLLM sleep mode: asleep is not ready ---------------------------------------------------------------------------

_ASLEEP = (
    "INFO 12-08 19:50:16 [worker.py:152] Sleep mode freed 23.72 GiB memory, 29.27 GiB memory is still in use.\n"
    "INFO 12-08 19:50:16 [executor_base.py:211] It took 1.060974 seconds to fall asleep.\n"
)


def test_vllm_engine_put_to_sleep_and_never_woken_is_not_ready(tmp_path: Path) -> None:
    # GIVEN an engine an RL trainer put to sleep (worker's `Sleep mode freed`, executor's `fall asleep`), then the
    # trainer's own line (ms-swift's logger: `[%(levelname)s:%(name)s] %(message)s`), and the log ends
    cleanup = "[INFO:swift] Memory cleanup attempt 1: Freed 0.00 GB reserved, 0.00 GB allocated\n"
    report = judge_text(tmp_path, _ASLEEP + cleanup)
    # THEN no ready server (the trainer's own step after the sleep does not wake the engine): a run judged open that
    # ended at serving, stalled post-mortem, the reason says it slept, and the trainer's step (ms-swift's
    # aggressive_empty_cache after `sleep`) is where it stopped
    assert (report["verdict"], report["phase"]) == ("stalled", "serving")
    assert "the engine was put to sleep (line 2" in report["reason"]
    assert root_text(report) == cleanup.strip()


def test_vllm_engine_woken_after_sleep_is_ready_again(tmp_path: Path) -> None:
    # GIVEN the same sleep, then the executor's wake-up line (0.8.5+: `... wake up tags [...]`)
    woke = "INFO 12-08 19:55:02 [executor_base.py:226] It took 0.412345 seconds to wake up tags ['weights'].\n"
    report = judge_text(tmp_path, _ASLEEP + woke)
    # THEN it serves again: ready
    assert (report["verdict"], report["phase"]) == ("ready", "serving")


# --- SGLang HiCache's Mooncake storage backend: set up with the tree cache, a KV-cache step -----------------------


def test_sglang_crash_after_hicache_mooncake_store_setup_is_placed_in_kv_cache(tmp_path: Path) -> None:
    # GIVEN SGLang ranks that set their HiCache Mooncake store up (mooncake_store.py `Mooncake store setup
    # successfully.`, then its warmup), interleaved with Mooncake's own glog lines, then one rank's scheduler exception
    text = (
        "I0116 07:02:58.081576 2594569 pybind_client.cpp:218] Mounting segment: 13421772800 bytes\n"
        "[2026-01-16 07:02:59 TP4] Mooncake store setup successfully.\n"
        "[2026-01-16 07:02:59 TP4] Mooncake store warmup successfully.\n"
        "[2026-01-16 07:02:59 TP6] Mooncake store setup successfully.\n"
        "E0116 07:02:59.408227 2594575 transfer_metadata_plugin.cpp:909] SocketHandShakePlugin:"
        " connect()10.0.0.30:15041: Connection refused [111]\n"
        "[2026-01-16 07:02:59 TP6] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2899, in run_scheduler_process\n'
        "AssertionError\n"
    )
    report = judge_text(tmp_path, text)
    # THEN it crashed while the hierarchical KV cache was being set up: kv_cache
    assert (report["verdict"], report["phase"]) == ("crashed", "kv_cache")


# --- SGLang diffusion: the offline generator is a job, the HTTP server's request a server's -----------------------

_STAGES = (
    "[03-04 12:21:38] Running pipeline stages: ['input_validation_stage', 'denoising_stage', 'decoding_stage']\n"
    "[03-04 12:21:38] [InputValidationStage] started...\n"
    "[03-04 12:21:38] [InputValidationStage] finished in 0.0001 seconds\n"
    "[03-04 12:21:38] [DenoisingStage] started...\n"
)


def test_sglang_diffusion_generator_counting_its_prompts_is_a_job_never_ready(tmp_path: Path) -> None:
    # GIVEN DiffGenerator's `Processing prompt %d/%d: %s` (diffusion_generator.py: the offline generator feeding its
    # own prompts), then the prompt's stages, and the log ends mid-way
    text = "[03-04 12:21:38] Processing prompt 1/2: A futuristic cyberpunk city at night\n" + _STAGES
    report = judge_text(tmp_path, text)
    # THEN a job at serving, open (stalled post-mortem), never ready
    assert (report["system"], report["phase"], report["verdict"]) == ("sglang", "serving", "stalled")


def test_sglang_diffusion_server_request_stages_are_a_serving_server(tmp_path: Path) -> None:
    # GIVEN the same stages with no prompt count (the HTTP server's request: openai/utils.py passes no index)
    report = judge_text(tmp_path, _STAGES)
    # THEN a server serving a request: ready
    assert (report["system"], report["phase"], report["verdict"]) == ("sglang", "serving", "ready")
