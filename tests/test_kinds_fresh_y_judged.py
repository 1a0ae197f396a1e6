"""Kinds of input the fresh-y batch's judgements were misread on, each written from the format the system prints in its
released source (the pack's rule or anchor cites it): frames that only a running server's stack holds (vLLM's
request handlers, SGLang's PD KV-manager threads), pm2's log prefix, slime's rollout bar and Ray's relayed
TimeoutError, torchrun's failed keep-alive heartbeat, and vLLM's `WorkerProc hit an exception: %s` header."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text

# --- pm2's `ID|NAME | ` prefix over an SGLang overlap worker's traceback ---------------------------------------------

# pm2 lib/API/Log.js `Log.stream`: `pm_id + '|' + name`, padded to one more than the longest name seen, then ` | `;
# sglang 0.4.5 tp_worker_overlap_thread.py: forward_thread_func logs `TpModelWorkerClient hit an exception: {tb}` for
# an exception of the loop that runs each batch (`forward_thread_func_` -> `self.worker.forward_batch_generation`)
_PM2_OVERLAP_WORKER = (
    "3|qwen  | [2025-04-11 15:03:19 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):\n"
    '3|qwen  |   File "/usr/lib/python3/dist-packages/sglang/srt/managers/tp_worker_overlap_thread.py", line 112,'
    " in forward_thread_func\n"
    "3|qwen  |     self.forward_thread_func_()\n"
    '3|qwen  |   File "/usr/lib/python3/dist-packages/torch/utils/_contextlib.py", line 116, in decorate_context\n'
    "3|qwen  |     return func(*args, **kwargs)\n"
    '3|qwen  |   File "/usr/lib/python3/dist-packages/sglang/srt/managers/tp_worker_overlap_thread.py", line 143,'
    " in forward_thread_func_\n"
    "3|qwen  |     logits_output, next_token_ids = self.worker.forward_batch_generation(\n"
)


def test_pm2_prefix_is_taken_off_and_sglang_read_under_it(tmp_path: Path) -> None:
    # GIVEN `pm2 logs` output of an SGLang server whose overlap worker raised while running a batch (cut in its frames)
    report = judge_text(tmp_path, _PM2_OVERLAP_WORKER)
    # THEN pm2's prefix is no part of the message: SGLang's own prefix and header are read (its rank), and the cut
    # traceback is caused at its innermost frame (fixtures/realworld/README.md, cut traceback)
    assert report["verdict"] == "crashed"
    assert report["system"] == "sglang"
    assert root_text(report).endswith('tp_worker_overlap_thread.py", line 143, in forward_thread_func_')
    assert report["root_cause"]["rank"] == "TP0"


def test_the_overlap_thread_alone_does_not_place_serving(tmp_path: Path) -> None:
    # GIVEN the same traceback cut above the call that runs the batch: only the thread's own loop is shown
    cut = "".join(_PM2_OVERLAP_WORKER.splitlines(keepends=True)[:3])
    report = judge_text(tmp_path, cut)
    # THEN it crashed, but the thread (started with the scheduler, idle until a batch comes) proves no serving
    assert report["verdict"] == "crashed"
    assert report["phase"] != "serving"


# --- vLLM's OpenAI server: a request's traceback, cut at both ends ----------------------------------------------------

_PREFIX = "(APIServer pid=42148) ERROR 03-17 12:30:26 [serving_completion.py:512] "
_SITE = "/opt/venv/lib/python3.12/site-packages/vllm"
_REQUEST_FRAMES = (
    f'{_PREFIX}  File "{_SITE}/entrypoints/openai/serving_completion.py", line 352, in completion_stream_generator\n'
    f"{_PREFIX}    async for prompt_idx, res in result_generator:\n"
    f'{_PREFIX}  File "{_SITE}/utils/async_utils.py", line 278, in merge_async_iterators\n'
    f"{_PREFIX}    async for item in iterators[0]:\n"
    f'{_PREFIX}  File "{_SITE}/v1/engine/async_llm.py", line 437, in generate\n'
    f"{_PREFIX}    out = q.get_nowait() or await q.get()\n"
)


def test_vllm_request_handler_frames_place_serving(tmp_path: Path) -> None:
    # GIVEN the middle of the API server's traceback of a streamed completion (vLLM 0.10.2 serving_completion.py
    # completion_stream_generator -> AsyncLLM.generate, which only a client's request calls)
    report = judge_text(tmp_path, _REQUEST_FRAMES)
    # THEN crashed while serving
    assert report["verdict"] == "crashed"
    assert report["phase"] == "serving"


# --- SGLang PD: the Mooncake KV manager's threads in a fatal error's dump ---------------------------------------------

_PD_DECODE_ABORT = (
    "Fatal Python error: Aborted\n"
    "\n"
    "Thread 0x00007ea3dfffd640 (most recent call first):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/disaggregation/mooncake/conn.py", line 817 in heartbeat_checker\n'
    '  File "/usr/lib/python3.10/threading.py", line 953 in run\n'
    '  File "/usr/lib/python3.10/threading.py", line 1016 in _bootstrap_inner\n'
    '  File "/usr/lib/python3.10/threading.py", line 973 in _bootstrap\n'
)


def test_pd_kv_manager_thread_in_a_fatal_dump_places_serving(tmp_path: Path) -> None:
    # GIVEN a decode instance's fatal error dump holding the Mooncake heartbeat thread (0.5.5 mooncake/conn.py: the KV
    # manager starts it in the scheduler's init_disaggregation, after the model worker and the watchdog)
    report = judge_text(tmp_path, _PD_DECODE_ABORT)
    # THEN aborted, past start-up
    assert report["verdict"] == "aborted"
    assert report["phase"] == "serving"


# --- slime's rollout bar and Ray's relayed TimeoutError ---------------------------------------------------------------

_SLIME_ROLLOUT_TIMEOUT = (
    "Rollout generation:  62%|██████▎   | 40/64 [04:51<02:52,  7.19s/it]\n"
    "Traceback (most recent call last):\n"
    '  File "/home/u/slime/train.py", line 69, in train\n'
    "    rollout_data_ref = ray.get(rollout_manager.generate.remote(rollout_id))\n"
    '  File "/opt/env/lib/python3.12/site-packages/ray/_private/worker.py", line 1015, in get_objects\n'
    "    raise value.as_instanceof_cause()\n"
    "ray.exceptions.RayTaskError({cause}): "
    "ray::RolloutManager.generate() (pid=1694029, ip=10.0.0.3, actor_id=d937ea7a\n"
)


def test_relayed_timeout_error_during_rollout_is_a_timeout_while_serving(tmp_path: Path) -> None:
    # GIVEN slime's driver: its rollout bar at 40/64, then ray.get re-raising the actor's TimeoutError
    report = judge_text(tmp_path, _SLIME_ROLLOUT_TIMEOUT.format(cause="TimeoutError"))
    # THEN a timeout, in the job's steps (generating a step's rollouts), the relayed exception the cause
    assert report["verdict"] == "timeout"
    assert report["phase"] == "serving"
    assert "RayTaskError(TimeoutError): ray::RolloutManager.generate()" in root_text(report)


def test_relayed_other_error_stays_a_crash(tmp_path: Path) -> None:
    # GIVEN the same driver traceback relaying a ValueError
    report = judge_text(tmp_path, _SLIME_ROLLOUT_TIMEOUT.format(cause="ValueError"))
    # THEN crashed (only a TimeoutError says a deadline passed)
    assert report["verdict"] == "crashed"
    assert report["phase"] == "serving"


# --- torchrun's agent: its keep-alive heartbeat to the rendezvous failed ----------------------------------------------

_KEEP_ALIVE_FAILED = (
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'docker.b_3427_0' has failed to send a "
    "keep-alive heartbeat to the rendezvous 'test' due to an error of type RendezvousConnectionError.\n"
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 3494 closing signal SIGTERM\n"
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'docker.b_3427_0' has failed to shutdown "
    "the rendezvous 'test' due to an error of type RendezvousConnectionError.\n"
)


def test_failed_keep_alive_is_the_cause_of_the_teardown(tmp_path: Path) -> None:
    # GIVEN an agent whose rendezvous store went away: the keep-alive failure, the SIGTERM to its worker, the shutdown
    report = judge_text(tmp_path, _KEEP_ALIVE_FAILED)
    # THEN crashed, and the keep-alive failure (the first word of it) is the cause, not the agent's SIGTERM
    assert report["verdict"] == "crashed"
    assert "has failed to send a keep-alive heartbeat to the rendezvous 'test'" in root_text(report)


# --- vLLM 0.8.2's worker header, `%s` printed as it is ----------------------------------------------------------------

_W = "(VllmWorker rank=0 pid=1068781) ERROR 01-04 17:21:04 multiproc_executor.py:401]"
_WORKER_PROC_RAISED = (
    'INFO:     127.0.0.1:45394 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    "INFO 01-04 17:21:02 core.py:247] RUNNING: 306 | WAITING: 628\n"
    f"{_W} WorkerProc hit an exception: %s\n"
    f"{_W} Traceback (most recent call last):\n"
    f'{_W}   File "/home/u/vllm/vllm/v1/executor/multiproc_executor.py", line 397, in worker_busy_loop\n'
    f"{_W}     output = getattr(self.worker, method)(*args, **kwargs)\n"
)


def test_worker_proc_header_with_its_unformatted_placeholder_is_the_cause(tmp_path: Path) -> None:
    # GIVEN a V1 worker's `logger.exception("WorkerProc hit an exception: %s", exc_info=e)` (no argument: logging prints
    # the `%s`) and its traceback, cut before the exception line
    report = judge_text(tmp_path, _WORKER_PROC_RAISED)
    # THEN the header says what failed
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("WorkerProc hit an exception: %s")
