"""An open log's cause is its last progress line over every line of the paste (fixtures/realworld/README.md,
`root_cause_line`): a line no rule reads still reports a step where its structure says so — a logger's INFO record
whose message is words, not a dump, a table, advice or a setting, or a tqdm tick — and bare text says nothing by its
structure (logs/records.py). The layouts are the loggers' own: logging's `%(levelname)s %(asctime)s [%(filename)s:
%(lineno)d] %(message)s` (vLLM), Ray's `%(asctime)s %(levelname)s %(filename)s:%(lineno)s -- %(message)s`,
tracing-subscriber's `{time}  INFO {target}: {message}` (dynamo, TGI), glog's `I%m%d %H:%M:%S.%f {tid} {file}:{line}]`
(Triton, c10), TensorRT-LLM's `[TensorRT-LLM][INFO] ` and `[TRT-LLM] [I] `, loguru's `{time} | INFO | {name} | `."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase.logs.records import info_message, is_bar_tick, reports_step
from tests.conftest import judge_text, root_text

STEP_RECORDS = (
    "2025-05-04T17:44:16.685Z  INFO serve_dynamo.worker: [Processor] Starting Processor instance with all endpoints",
    "2024-12-12 05:27:54,657 INFO worker.py:1636 -- Connecting to existing Ray cluster at address 10.0.0.1:6379",
    "(EngineCore_DP0 pid=590) INFO 11-25 02:39:49 [factory.py:64] Creating v1 connector with name: NixlConnector",
    'I0507 12:59:52.377360 3426 logging.cc:46] "Loaded engine size: 63 MiB"',
    "[TensorRT-LLM][INFO] Initializing MPI with thread mode 1",
    "2025-07-02 16:41:31 | INFO | stdout | Capture cuda graph bs [1, 2, 4, 8]",
    "[2025-04-19 22:11:43,788] [    INFO]: Found 1 custom tasks in /home/user/tasks.py",
    "2025-02-02 10:48:51,310 - lmdeploy - INFO - async_engine.py:260 - building the turbomind engine",
    "2025-05-14 17:41:26.328 1645354 kserve INFO [server.py:start():70] Starting gRPC server on [::]:8081",
)

NOT_STEPS = (
    # README's own examples of lines that report no step: a setting, advice, an argument dump
    "INFO 07-15 03:49:31 [scheduler.py:239] Chunked prefill is enabled with max_num_batched_tokens=2048.",
    "INFO 07-17 23:41:31 model_runner.py:851] CUDA graphs can take additional 1~3 GiB memory per GPU.",
    "INFO 02-18 09:33:49 [arg_utils.py:12] args: Namespace(model='m', tensor_parallel_size=2)",
    "2024-11-07 12:04:21,556 - lmdeploy - INFO - turbomind.py:200 - turbomind model config:",
    "INFO 03-27 19:09:32 __init__.py:190] Automatically detected platform cuda.",
    "INFO 05-14 17:41:26 [serving_chat.py:118] Using default chat sampling params from model",
    # not at INFO level: a warning is advice
    "2025-11-13T12:45:18.788522Z  WARN dynamo_runtime::config: the variable is deprecated",
    # a record cut inside its prefix, or inside its message's first word: its first words are not left
    "2025-06-25T10:50:19.634Z  INF",
    "I1106 12:36:07.400054 3487 python_be.cc:2199] TRITONBA",
    # bare text and a person's prose: nothing in their structure says a step
    "Loading model done.",
    "then the INFO line says it started the engine",
    "at 12:00:01 the INFO line says it started the engine",
    # an access line of a refused request (uvicorn's `%(client_addr)s - "%(request_line)s" %(status_code)s`): the
    # health route's 503 while the server starts is no step done
    '[2026-04-21 09:21:13] INFO:     10.244.3.1:36484 - "GET /health HTTP/1.1" 503 Service Unavailable',
)


@pytest.mark.parametrize("line", STEP_RECORDS)
def test_an_info_record_of_words_reports_a_step(line: str) -> None:
    # GIVEN a record of a known logger layout at INFO level whose message says something being done
    # THEN it reports a step
    assert reports_step(line)


@pytest.mark.parametrize("line", NOT_STEPS)
def test_a_dump_a_setting_advice_a_warning_or_bare_text_reports_none(line: str) -> None:
    assert not reports_step(line)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (STEP_RECORDS[0], "[Processor] Starting Processor instance with all endpoints"),
        (STEP_RECORDS[1], "Connecting to existing Ray cluster at address 10.0.0.1:6379"),
        (STEP_RECORDS[2], "Creating v1 connector with name: NixlConnector"),
        (STEP_RECORDS[3], "Loaded engine size: 63 MiB"),
        (STEP_RECORDS[4], "Initializing MPI with thread mode 1"),
    ],
)
def test_the_message_is_what_follows_the_loggers_fields(line: str, message: str) -> None:
    assert info_message(line) == message


@pytest.mark.parametrize(
    "line",
    [
        "Loading checkpoint shards:   0%|          | 0/4 [00:00<?, ?it/s]",
        "  0%|",
        "Fetching 15 files: 100%|██████████| 15/15 [00:00<00:00, 1081.21it/s]",
    ],
)
def test_a_bar_tick_reports_a_step_at_0_percent_too(line: str) -> None:
    # README, *a bar at 0 %*: a tick at `0%|` is a step begun
    assert is_bar_tick(line)
    assert reports_step(line)


@given(index=st.sampled_from(range(len(STEP_RECORDS))), pid=st.integers(1, 10**6))
def test_a_ray_actor_tag_before_a_record_changes_nothing(index: int, pid: int) -> None:
    # GIVEN a record relayed by Ray from an actor (`(RayWorkerWrapper pid=N) ` before the worker's own line)
    line = STEP_RECORDS[index]
    # THEN it is the same step, with the same message
    tagged = f"(RayWorkerWrapper pid={pid}) {line}"
    assert reports_step(tagged)
    assert info_message(tagged) == info_message(line)


@given(index=st.sampled_from(range(len(STEP_RECORDS))))
def test_the_same_record_at_warning_level_is_no_step(index: int) -> None:
    # GIVEN a step record, its level word made a warning's (`INFO` → `WARNING`, `[I]`/`I` glog → `W`)
    line = STEP_RECORDS[index]
    warned = line.replace("INFO", "WARNING", 1) if "INFO" in line else "W" + line[1:]
    # THEN it is advice, no step
    assert not reports_step(warned)


VLLM_HEAD = (
    "(EngineCore_DP0 pid=590) INFO 11-25 02:39:44 [core.py:93] Initializing a V1 LLM engine (v0.11.0) with config: "
    "model='Qwen/Qwen3-8B', tensor_parallel_size=1\n"
    "(EngineCore_DP0 pid=590) INFO 11-25 02:39:47 [gpu_model_runner.py:2602] Model loading took 15.27 GiB and "
    "2.41 seconds\n"
    "(EngineCore_DP0 pid=590) INFO 11-25 02:39:49 [core.py:253] init engine (profile, create kv cache, warmup model) "
    "took 21.62 seconds\n"
)
UNREAD_STEP = "2025-11-25T02:39:50.111Z  INFO serve_dynamo.worker: [Processor] Starting Processor instance"


def test_a_later_record_no_rule_reads_is_the_stall_line(tmp_path: Path) -> None:
    # GIVEN a vLLM start-up whose last line a rule reads is its engine's init, then a record of another process's
    # logger that no rule reads, saying it starts a step
    report = judge_text(tmp_path, VLLM_HEAD + UNREAD_STEP + "\n")
    # THEN the log is open and its cause is that record: the last line that reports a step
    assert report["verdict"] == "stalled"
    assert root_text(report) == UNREAD_STEP
    assert report["root_cause"]["line"] == 4


def test_a_setting_after_the_last_step_is_passed_over(tmp_path: Path) -> None:
    # GIVEN the same, then a record that states a setting (README, *config notes*)
    note = "2025-11-25T02:39:51.000Z  INFO serve_dynamo.config: Chunked prefill is enabled with max_tokens=2048"
    report = judge_text(tmp_path, VLLM_HEAD + UNREAD_STEP + "\n" + note + "\n")
    # THEN the cause is the step before it
    assert root_text(report) == UNREAD_STEP


def test_a_bar_at_0_percent_stays_the_cause_under_hang_reports(tmp_path: Path) -> None:
    # GIVEN vLLM's offline bar at 0 %, then the engine's shm broadcast hang reports (shm_broadcast.py, every 60 s)
    bar = "Processed prompts:   0%|          | 0/100 [00:00<?, ?it/s, est. speed input: 0.00 toks/s]"
    hang = (
        "(EngineCore_DP0 pid=323240) INFO 12-09 11:{m}:53 [shm_broadcast.py:466] No available shared memory broadcast"
        " block found in 60 seconds. This typically happens when some processes are hanging or doing some"
        " time-consuming work (e.g. compilation)."
    )
    text = bar + "\n" + "".join(hang.format(m=m) + "\n" for m in (25, 26, 27))
    report = judge_text(tmp_path, text)
    # THEN stalled, and the bar is the cause (README, *a bar at 0 %*), the hang report said in the reason
    assert report["verdict"] == "stalled"
    assert root_text(report) == bar
    assert "No available shared memory broadcast block" in report["reason"]
