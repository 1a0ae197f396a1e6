"""A fragment from the middle of a running server or job (its scheduler, stats and step lines, no start-up) reads as
`serving`, each kind by the line its system's source prints only while it serves; a paste in one inline code span."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logphase.logs.envelope import sniff, unspan
from tests.conftest import judge_text, root_text


def test_an_sglang_retract_storm_alone_is_a_serving_server(tmp_path: Path) -> None:
    # GIVEN the schedulers of TP8-15 retracting decode requests under KV pressure (0.4.x wording), nothing else
    text = "".join(
        f"[2025-03-07 21:49:{33 + i // 8:02d} TP{8 + i % 8}] Decode out of memory happened. #retracted_reqs: 1, "
        "#new_token_ratio: 0.1474 -> 0.1845\n"
        for i in range(16)
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the server is serving: a retraction is the decode loop carrying on, no failure
    assert (report["system"], report["phase"], report["verdict"]) == ("sglang", "serving", "ready")


@pytest.mark.parametrize(
    "details",
    [
        "#retracted_reqs: 3, #aborted_retracted_reqs: 0, #new_token_ratio: 0.3120 -> 0.5480",  # 0.5.3
        "#retracted_reqs: 3, #new_tokens_gained: 4096, #new_token_ratio: 0.3120 -> 0.5480",  # 0.5.23
    ],
)
def test_sglang_0_5_retraction_wording_reads_the_same(tmp_path: Path, details: str) -> None:
    # GIVEN 0.5.x's wording of the retraction between two decode batches
    text = (
        "[2025-11-02 08:14:00 TP0] Decode batch, #running-req: 64, #token: 120000, token usage: 0.99, "
        "cuda graph: True, gen throughput (token/s): 2100.00, #queue-req: 12, \n"
        f"[2025-11-02 08:14:10 TP0] KV cache pool is full. Retract requests. {details}\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN serving, ready, no cause
    assert (report["phase"], report["verdict"], report["root_cause"]) == ("serving", "ready", None)


DECODE_OOM = (
    "RuntimeError: Decode out of memory. Try to lower your batch size.\n"
    "Try to allocate 148 tokens.\n"
    "Avaliable tokens: 2048\n"
    "self.token_to_kv_pool_allocator.available_size()=2048\n"
    "self.tree_cache.evictable_size()=0"
)


def test_sglangs_decode_out_of_memory_pasted_in_one_inline_code_span_is_a_serving_crash(tmp_path: Path) -> None:
    # GIVEN the scheduler's decode-allocation error as a person quoted it: one backtick before its first line and
    # one after its last
    report = judge_text(tmp_path, "`" + DECODE_OOM + "`\n")
    # THEN the scheduler died while decoding requests, and the error line (its backtick off) is the cause
    assert (report["phase"], report["verdict"]) == ("serving", "crashed")
    assert root_text(report) == "RuntimeError: Decode out of memory. Try to lower your batch size."


def test_a_paste_in_one_span_is_read_as_the_same_paste_without_it(tmp_path: Path) -> None:
    # GIVEN the same lines with and without the span's backticks
    bare = judge_text(tmp_path, DECODE_OOM + "\n", "bare.log")
    spanned = judge_text(tmp_path, "`" + DECODE_OOM + "`\n", "spanned.log")
    # THEN the same phase, verdict and cause
    assert (spanned["phase"], spanned["verdict"]) == (bare["phase"], bare["verdict"])
    assert root_text(spanned) == root_text(bare)


def test_a_first_line_with_its_own_paired_backticks_opens_no_span() -> None:
    # GIVEN transformers' warning, which quotes names in backticks, as a log's first line
    head = [
        "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.",
        "{'loss': 2.1034, 'grad_norm': 1.4375, 'learning_rate': 4.9e-05, 'epoch': 0.02}",
    ]
    # WHEN its envelopes are sniffed
    envelopes = sniff(head)
    # THEN no span is read: the line keeps its backticks
    assert not envelopes.code_spanned
    assert unspan(head[0], envelopes.code_spanned) == head[0]


@given(st.text(alphabet=st.characters(blacklist_characters="`\n\r"), min_size=1, max_size=40))
@settings(max_examples=60)
def test_unspan_takes_off_only_an_unpaired_backtick_at_a_lines_edge(inner: str) -> None:
    # GIVEN a line opening or closing a span, and one quoting a word inside it
    # THEN the span's backtick comes off; a pair stays
    assert unspan("`" + inner, True) == inner
    assert unspan(inner + "`", True) == inner
    assert unspan("`" + inner + "`", True) == "`" + inner + "`"
    assert unspan("`" + inner, False) == "`" + inner


def test_lmcache_lookups_inside_vllms_engine_core_are_a_serving_engine(tmp_path: Path) -> None:
    # GIVEN LMCache's connector lookups (lmcache/logging.py format) under vLLM's engine-core tag
    text = "".join(
        f"(EngineCore_0 pid=3945189) [2025-08-21 07:17:09,{753 + i}] LMCache INFO: Reqid: cmpl-{i:032x}-0, "
        f"Total tokens 8891, LMCache hit tokens: 8704, need to load: 8704 "
        "(vllm_v1_adapter.py:1050:lmcache.integration.vllm.vllm_v1_adapter)\n"
        for i in range(3)
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN vLLM serving
    assert (report["system"], report["phase"], report["verdict"]) == ("vllm", "serving", "ready")


def test_lmdeploys_pytorch_engine_debug_loop_is_serving(tmp_path: Path) -> None:
    # GIVEN the PyTorch engine's DEBUG lines of one request's decoding with the Ray executor
    text = (
        "2025-07-24 07:59:26,960 - lmdeploy - DEBUG - ray_executor.py:443 - Receive 1 outputs from worker[0].\n"
        "2025-07-24 07:59:26,960 - lmdeploy - DEBUG - engine.py:926 - Response sessions: [1]\n"
        "2025-07-24 07:59:26,960 - lmdeploy - DEBUG - engine_instance.py:154 - session[1] success: num_out_ids=32.\n"
        "2025-07-24 07:59:26,979 - lmdeploy - DEBUG - engine.py:861 - Make forward inputs with prefill=False, "
        "enable_empty=False\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN LMDeploy serving
    assert (report["system"], report["phase"], report["verdict"]) == ("lmdeploy", "serving", "ready")


def test_tgis_radix_allocations_place_the_router_in_serving(tmp_path: Path) -> None:
    # GIVEN the v3 router's radix allocator batching requests (tracing's compact format)
    text = "".join(
        f"2024-12-14T03:44:30.{839230 + i * 40000}Z  INFO text_generation_router_v3::radix: "
        f"backends/v3/src/radix.rs:108: Prefix 0 - Suffix 13715\n"
        for i in range(4)
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN TGI at serving
    assert (report["system"], report["phase"]) == ("tgi", "serving")


def test_xinference_generation_speed_lines_are_a_serving_server(tmp_path: Path) -> None:
    # GIVEN the transformers backend's per-request speed and a client leaving (xinference's logging format)
    text = (
        "2024-07-19 15:01:49,005 xinference.model.llm.pytorch.utils 63561 INFO     Average generation speed: 3.22 "
        "tokens/s.\n"
        "2024-07-19 15:02:18,889 xinference.api.restful_api 63191 INFO     Disconnected from client (via "
        "refresh/close) Address(host='127.0.0.1', port=36816) during chat.\n"
        "2024-07-19 15:02:24,799 xinference.model.llm.pytorch.utils 63561 INFO     Average generation speed: 0.85 "
        "tokens/s.\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN Xinference serving
    assert (report["system"], report["phase"], report["verdict"]) == ("xinference", "serving", "ready")


def test_ms_swifts_end_of_main_then_a_trackers_atexit_error_is_finished(tmp_path: Path) -> None:
    # GIVEN swift's end line, then a tracker's exception in an atexit callback at interpreter exit
    text = (
        "[INFO:swift] End time of running main: 2025-05-20 14:23:52.567528\n"
        "swanlab: Experiment sft_2 has completed\n"
        "Exception ignored in atexit callback: <bound method CloudRunCallback._clean_handler of "
        "<swanlab.data.callbacker.cloud.CloudRunCallback object at 0x7f1dc0492720>>\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.12/site-packages/swanlab/data/callbacker/cloud.py", line 87, '
        "in _clean_handler\n"
        "    run.finish()\n"
        "KeyError: 'run'\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the job ran its steps (the furthest phase: no step line is in the excerpt) to their end
    assert (report["furthest_phase"], report["verdict"]) == ("serving", "finished")


def test_vllm_lines_through_ucms_logger_are_read_as_vllms(tmp_path: Path) -> None:
    # GIVEN vLLM's hang report and its engine's input dump, written through UCM's spdlog pattern
    text = (
        "[2026-04-28 14:18:16.766058][UC][I] No available shared memory broadcast block found in 60 seconds. This "
        "typically happens when some processes are hanging or doing some time-consuming work (e.g. compilation, "
        "weight/kv cache quantization). [314,314][shm_broadcast.py:681,acquire_read]\n"
        "[2026-04-28 14:19:15.028990][UC][E] Dumping input data for V1 LLM engine (v0.18.0) with config: "
        "model='/data/m', speculative_config=None [314,314][dump_input.py:72,_dump_engine_exception]\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN a serving engine's step raised, the dump the line that says so
    assert (report["system"], report["phase"], report["verdict"]) == ("vllm", "serving", "crashed")
    assert "Dumping input data for V1 LLM engine (v0.18.0)" in root_text(report)


def test_opendwm_steps_that_end_mid_run_are_a_stalled_job_at_its_last_step(tmp_path: Path) -> None:
    # GIVEN an OpenDWM training's step lines, the log ending after the last
    text = "The pipeline is loaded.\n" + "".join(
        f"Step {step} (1.1 s/step), loss: 0.39{step // 100:02d}\n" for step in range(100, 600, 100)
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job's steps stopped at the last one
    assert (report["phase"], report["verdict"]) == ("serving", "stalled")
    assert root_text(report) == "Step 500 (1.1 s/step), loss: 0.3905"


@pytest.mark.parametrize("stamped", [False, True])
def test_an_agent_lightning_task_timeout_is_a_timeout_while_serving(tmp_path: Path, stamped: bool) -> None:
    # GIVEN the training server's stale-task check requeuing a rollout (with or without the stamp and level)
    head = "2025-08-02 10:11:12,345 [WARNING] " if stamped else ""
    text = (
        f"{head}(Process-11615 agentlightning.server) Requeuing task rollout-85c3e463 after timeout (attempt 1)\n"
        f"{head}(Process-11615 agentlightning.server) Task rollout-85c3e463 timed out after 600.0s, requeued "
        "(attempt 1)\n"
        f"{head}(Process-11615 agentlightning.server) Task rollout-85c3e463 re-claimed (attempt 2)\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the task's timeout is the cause
    assert (report["phase"], report["verdict"]) == ("serving", "timeout")
    assert root_text(report).endswith("Task rollout-85c3e463 timed out after 600.0s, requeued (attempt 1)")


def test_a_span_opened_inside_a_wrappers_prefix_comes_off_with_it(tmp_path: Path) -> None:
    # GIVEN the spanned paste collected by `kubectl logs --timestamps` (an RFC 3339 stamp before each line)
    lines = ("`" + DECODE_OOM + "`").splitlines()
    text = "".join(f"2025-10-02T11:20:41.{100000000 + i}Z {line}\n" for i, line in enumerate(lines))
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN read as the bare paste is: the cause without the span's backtick
    assert (report["phase"], report["verdict"]) == ("serving", "crashed")
    assert root_text(report).endswith("RuntimeError: Decode out of memory. Try to lower your batch size.")
