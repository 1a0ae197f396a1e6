"""Failures only a serving engine can have, read from fragments whose one phase evidence is a stack or a cut line."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

SITE = "/opt/venv/lib/python3.12/site-packages"
# vllm/executor/multiproc_worker_utils.py `_add_prefix` (0.8.3): every line a V1 worker process writes, colour removed
WORKER = "(VllmWorker rank=1 pid=4242) "


def _frame(path: str, line: int, function: str, source: str) -> str:
    return f'{WORKER}  File "{SITE}/{path}", line {line}, in {function}\n{WORKER}    {source}\n'


def test_a_v1_worker_traceback_through_the_grammar_bitmask_crashed_serving(tmp_path: Path) -> None:
    # GIVEN the middle of a V1 worker's traceback (0.8.3: the worker's execute_model -> its model runner's ->
    # apply_grammar_bitmask, which runs only for a scheduled request with structured output), cut before its end
    report = judge_text(
        tmp_path,
        _frame("vllm/v1/worker/gpu_worker.py", 242, "execute_model", "output = self.model_runner.execute_model(")
        + _frame(
            "vllm/v1/worker/gpu_model_runner.py",
            1065,
            "execute_model",
            "self.apply_grammar_bitmask(scheduler_output, logits)",
        )
        + _frame(
            "vllm/v1/worker/gpu_model_runner.py", 970, "apply_grammar_bitmask", "xgr.apply_token_bitmask_inplace("
        ),
    )
    # WHEN judged THEN the worker crashed running requests
    assert (report["verdict"], report["phase"], report["furthest_phase"]) == ("crashed", "serving", "serving")


def test_a_v1_worker_traceback_through_the_structured_output_helper_crashed_serving(tmp_path: Path) -> None:
    # GIVEN 0.9+'s place of the same step (0.11.0: execute_model calls structured_output/utils.py
    # apply_grammar_bitmask), cut below the helper's frame
    report = judge_text(
        tmp_path,
        _frame(
            "vllm/v1/worker/gpu_model_runner.py",
            2363,
            "execute_model",
            "apply_grammar_bitmask(scheduler_output, self.input_batch,",
        )
        + _frame("vllm/v1/structured_output/utils.py", 98, "apply_grammar_bitmask", "xgr.apply_token_bitmask_inplace("),
    )
    # WHEN judged THEN serving
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")


def test_a_v1_profile_run_through_the_dummy_run_is_no_serving_step(tmp_path: Path) -> None:
    # GIVEN the V1 start-up's model run (0.8.3: the worker's determine_available_memory -> the runner's profile_run
    # -> _dummy_run, the model called without a request), cut in the model's forward
    report = judge_text(
        tmp_path,
        _frame("vllm/v1/worker/gpu_worker.py", 167, "determine_available_memory", "self.model_runner.profile_run()")
        + _frame("vllm/v1/worker/gpu_model_runner.py", 1557, "profile_run", "hidden_states = self._dummy_run(")
        + _frame("vllm/v1/worker/gpu_model_runner.py", 1420, "_dummy_run", "hidden_states = model(")
        + f"{WORKER}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    )
    # WHEN judged THEN it failed sizing the KV cache, not serving
    assert (report["verdict"], report["phase"]) == ("crashed", "kv_cache")


def test_a_tgi_generation_failure_cut_inside_its_span_chain_crashed_serving(tmp_path: Path) -> None:
    # GIVEN the router's full tracing line for a request that failed in the shards (backends/v3/src/backend.rs
    # send_errors: the `send_error` span under the request's span chain, the target, the file, then InferError's
    # `Request failed during generation: …`), copied from inside the chain's parameters, then the launcher's line
    line = (
        'ool\\": Object {\\"type\\": String(\\"object\\")}}})), adapter_id: None }"}:generate:generate_stream:schedule:'
        "infer:send_error: text_generation_router_v3::backend: backends/v3/src/backend.rs:546: Request failed during "
        "generation: Server error: CUDA error: an illegal memory access was encountered"
    )
    report = judge_text(
        tmp_path,
        line + "\n2025-07-22T11:31:33.107777Z ERROR shard-manager: text_generation_launcher: Shard complete standard "
        "error output:\n",
    )
    # WHEN judged THEN a request was being generated when the shard failed: crashed serving, said by that line
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")
    assert root_text(report) == line
