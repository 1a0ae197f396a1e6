"""Kinds of input the fresh-w batch's judgements were misread on (second pass), each written from the source that
prints or runs it: a py-spy dump of a rank tearing its process group down beside torch inductor's idle compile-worker
reader thread (torch 2.13 distributed_c10d.destroy_process_group, _inductor/compile_worker/subproc_pool.py), and an RL
driver's traceback through verl's agent loop, whose rollout server actor died (verl 0.7.0
experimental/agent_loop/agent_loop.py AsyncLLMServerManager.generate; Ray's ActorDiedError)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import judge_text, root_text

# --- py-spy: the main thread waits in destroy_process_group; inductor's reader thread waits for its workers --------

# py-spy's `dump --pid` text (src/dump.rs): per thread `Thread 0x… (idle|active): "name"` then its frames innermost
# first, `    function (file:line)`; a torchtitan trainer after training, its process group's teardown blocked
_MAIN_IN_TEARDOWN = (
    'Thread 0x7F81445A8440 (active): "MainThread"\n'
    "    destroy_process_group (torch/distributed/distributed_c10d.py:2184)\n"
    "    <module> (torchtitan/train.py:554)\n"
    "    _run_code (runpy.py:86)\n"
    "    _run_module_as_main (runpy.py:196)\n"
)
# the parent's reader thread of the inductor compile-worker pool (SubprocPool._read_thread -> _recv_msg): it waits on a
# pipe for finished jobs for as long as the pool lives, compile or no compile
_COMPILE_READER = (
    'Thread 0x7F7E83CFF640 (active): "Thread-1 (_read_thread)"\n'
    "    _recv_msg (torch/_inductor/compile_worker/subproc_pool.py:61)\n"
    "    _read_thread (torch/_inductor/compile_worker/subproc_pool.py:195)\n"
    "    run (threading.py:953)\n"
    "    _bootstrap_inner (threading.py:1016)\n"
    "    _bootstrap (threading.py:973)\n"
)
_TQDM_MONITOR = (
    'Thread 0x7F7D9CFF9640 (idle): "Thread-2"\n'
    "    wait (threading.py:324)\n"
    "    wait (threading.py:607)\n"
    "    run (tqdm/_monitor.py:60)\n"
    "    _bootstrap_inner (threading.py:1016)\n"
    "    _bootstrap (threading.py:973)\n"
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations([_MAIN_IN_TEARDOWN, _COMPILE_READER, _TQDM_MONITOR]))
def test_dump_stuck_in_process_group_teardown(tmp_path: Path, order: list[str]) -> None:
    # GIVEN a py-spy dump whose main thread sits in destroy_process_group, in any order of its threads
    report = judge_text(tmp_path, "".join(order))
    # THEN the rank is stalled tearing its communicators down (placed as NCCL's own Abort line is: dist_init), placed
    # by that frame (a frame is evidence of where the rank was, never a cause: docs/design.md)
    assert (report["verdict"], report["phase"]) == ("stalled", "dist_init")
    assert "`destroy_process_group (torch/distributed/distributed_c10d.py)`" in report["reason"]


def test_idle_compile_worker_thread_proves_no_compile(tmp_path: Path) -> None:
    # GIVEN a dump whose main thread runs the user's own code, beside inductor's reader thread (waiting for the pool)
    # and tqdm's monitor
    main = _MAIN_IN_TEARDOWN.replace(
        "destroy_process_group (torch/distributed/distributed_c10d.py:2184)", "step (mytrain.py:40)"
    )
    report = judge_text(tmp_path, main + _COMPILE_READER + _TQDM_MONITOR)
    # THEN no compile phase is read from it: the pool's helper waits whether or not anything compiles
    assert report["phase"] != "compile"


def test_user_function_named_destroy_process_group_is_no_teardown(tmp_path: Path) -> None:
    # GIVEN the same dump, the main thread in a function of the user's own file with torch's name
    dump = _MAIN_IN_TEARDOWN.replace("torch/distributed/distributed_c10d.py:2184", "trainer_utils.py:40")
    report = judge_text(tmp_path, dump + _TQDM_MONITOR)
    # THEN it places nothing: only torch.distributed's teardown waits for the communicators
    assert report["phase"] != "dist_init"


# --- verl: the agent loop's call to a rollout server actor that died -------------------------------------------------

_VERL_PREFIX = "[2026-03-12 11:50:36] (TaskRunner pid=3483799) "
_AGENT_LOOP_TAIL = (
    '  File "/opt/verl/verl/experimental/agent_loop/agent_loop.py", line 115, in generate\n'
    "    output = await server.generate.remote(\n"
    "             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    "\tclass_name: SGLangHttpServer\n"
    "\tactor_id: 977b53d3f398f5ce457569ec01000000\n"
    "\tpid: 3491208\n"
    "\tname: sglang_server_1_0\n"
    "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
    "Worker unexpectedly exits with a connection error code 2. End of file.\n"
)


def _prefixed(text: str) -> str:
    return "".join(f"{_VERL_PREFIX}{line}\n" for line in text.splitlines())


def test_rollout_server_actor_died_in_the_agent_loop_is_serving(tmp_path: Path) -> None:
    # GIVEN the TaskRunner's traceback ending in verl's AsyncLLMServerManager.generate and Ray's ActorDiedError
    report = judge_text(tmp_path, _prefixed(_AGENT_LOOP_TAIL))
    # THEN the job was in its steps (the trainer reaches the agent loop only from fit / validation), and crashed
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")
    assert root_text(report).endswith(
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task."
    )


def test_actor_died_while_verl_starts_its_servers_is_not_serving(tmp_path: Path) -> None:
    # GIVEN the same death under verl's server start-up (LLMServerManager._initialize_llm_servers), not the agent loop
    tail = _AGENT_LOOP_TAIL.replace(
        '"/opt/verl/verl/experimental/agent_loop/agent_loop.py", line 115, in generate',
        '"/opt/verl/verl/workers/rollout/llm_server.py", line 440, in _initialize_llm_servers',
    ).replace(
        "output = await server.generate.remote(", "await asyncio.gather(*[server.init_standalone() for server in s])"
    )
    report = judge_text(tmp_path, _prefixed(tail))
    # THEN it crashed, but nothing places it in the job's steps
    assert report["verdict"] == "crashed"
    assert report["phase"] != "serving"


# --- a line that ends start-up whose capture the server may skip, on a paste cut before any step of it --------------

# SGLang's Scheduler logs `max_total_num_tokens=` once its model runner finished (weights, KV pool, and the CUDA graphs
# unless --disable-cuda-graph); vLLM's engine core logs `init engine (...) took` after the workers' warm-up, whose
# capture runs unless enforce_eager (v1/engine/core.py, v1/worker/gpu_worker.py)
_SGLANG_DONE = (
    "[2025-01-29 19:50:52 TP0] max_total_num_tokens=480406, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    "max_running_requests=4096, context_len=163840\n"
)
_SGLANG_CAPTURE = "[2025-01-29 19:49:10 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
_VLLM_DONE = (
    "(EngineCore_DP0 pid=590) INFO 11-25 02:39:49 [core.py:253] init engine (profile, create kv cache, warmup model) "
    "took 21.62 seconds\n"
)
_VLLM_CAPTURE = (
    "(EngineCore_DP0 pid=590) INFO 11-25 02:39:47 [gpu_model_runner.py:2708] Graph capturing finished in 12 secs, "
    "took 0.49 GiB\n"
)
_NOISE = (
    'loc("/sgl-workspace/sglang/python/sglang/srt/layers/attention/triton_ops/decode_attention.py":310:16): '
    "error: operation scheduled before its operands\n"
)


def test_sglang_end_of_init_alone_proves_the_kv_pool_not_a_capture(tmp_path: Path) -> None:
    # GIVEN a paste whose only SGLang line is the scheduler's end of model init
    report = judge_text(tmp_path, _NOISE + _SGLANG_DONE)
    # THEN it proves the KV pool, not a capture no line shows
    assert report["phase"] == "kv_cache"


def test_sglang_end_of_init_after_a_capture_closes_the_capture(tmp_path: Path) -> None:
    # GIVEN the same line after the capture's begin
    report = judge_text(tmp_path, _SGLANG_CAPTURE + _SGLANG_DONE)
    # THEN it closes the capture the log shows
    assert report["phase"] == "cuda_graph"


def test_vllm_init_engine_alone_proves_the_kv_cache_not_a_capture(tmp_path: Path) -> None:
    # GIVEN a paste whose only vLLM line is the engine core's end of init
    report = judge_text(tmp_path, _VLLM_DONE)
    # THEN it proves the KV cache, not a capture no line shows
    assert report["phase"] == "kv_cache"


def test_vllm_init_engine_after_a_capture_closes_the_capture(tmp_path: Path) -> None:
    # GIVEN the same line after the workers' capture ended
    report = judge_text(tmp_path, _VLLM_CAPTURE + _VLLM_DONE)
    # THEN it closes the capture the log shows
    assert report["phase"] == "cuda_graph"
