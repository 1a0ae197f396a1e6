"""Servers on accelerators other than one NVIDIA box, and the servers beside them: the lines of Gaudi's vLLM builds
(HabanaAI/vllm-fork, vllm-gaudi), of TPU ports (sglang-jax, vLLM's tpu-inference), of SGLang's Ascend graph runner, of
the Intel xe and ROCm runtimes' failures, of Xinference, and the layouts they reach us in (milabench's JSON-lines event
log, TGI's launcher JSON with its records glued, a py-spy dump pasted alone). Formats from the released sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from logphase.logs.envelope import Unwrapped, json_text
from logphase.logs.reader import line_updates
from tests.conftest import judge_text, root_text

# --- Gaudi (HPU): the warmup compiles one shape bucket after another ------------------------------------------------

FORK = (
    "INFO 08-26 07:{mm}:{ss} habana_model_runner.py:1192] "
    "[Warmup][Prompt][{i}/56] batch_size:{bs} seq_len:{n} free_mem:13.86 GiB"
)


def _fork_buckets(count: int) -> list[str]:
    return [
        FORK.format(mm=31 + i // 3, ss=f"{(i * 17) % 60:02d}", i=i, bs=64, n=1024 - 128 * (i % 4))
        for i in range(1, count + 1)
    ]


def test_a_gaudi_warmup_cut_between_buckets_stalled_in_compile_at_its_last_bucket(tmp_path: Path) -> None:
    # GIVEN vllm-fork's HPU warmup, eight of 56 prompt buckets logged, then the excerpt ends
    lines = _fork_buckets(8)
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN the run is open in compile (each bucket is a graph compilation), the last bucket where it stopped
    assert (report["system"], report["verdict"], report["phase"]) == ("vllm", "stalled", "compile"), report["reason"]
    assert root_text(report).endswith("[Warmup][Prompt][8/56] batch_size:64 seq_len:1024 free_mem:13.86 GiB")


def test_vllm_gaudis_bare_bucket_lines_and_the_warmups_end(tmp_path: Path) -> None:
    # GIVEN vllm-gaudi's buckets written by tqdm.write (no logger prefix), then `Warmup finished in …`, then nothing
    lines = [
        "(Worker_TP0 pid=71) INFO 04-09 11:20:00 [hpu_model_runner.py:4675] Starting sampler warmup...",
        "(Worker_TP0 pid=71) INFO 04-09 11:20:09 [hpu_model_runner.py:4740] Sampler warmup completed successfully",
        "[Warmup][Prompt][1/2] batch_size:1 query_len:128 num_blocks:0 free_mem:60.1 GiB",
        "[Warmup][Decode][2/2] batch_size:16 query_len:1 num_blocks:128 free_mem:60.0 GiB",
        "(Worker_TP0 pid=71) INFO 04-09 11:29:40 [hpu_model_runner.py:6310] "
        "Warmup finished in 580 secs, allocated 1.1 GiB of device memory",
    ]
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN the compile step is the furthest it got, ended by the warmup's end line
    assert (report["system"], report["furthest_phase"]) == ("vllm", "compile"), report["reason"]
    assert "Warmup finished in 580 secs" in root_text(report)


def test_a_gaudi_sampler_warmup_that_never_ends_stalled_in_compile(tmp_path: Path) -> None:
    # GIVEN vllm-gaudi's TP0 worker listing the sampler's configurations and starting its warmup, and another rank's
    # prefix cut where the excerpt ends
    lines = [
        "(Worker_TP0 pid=635023) INFO 04-09 11:25:43 [hpu_model_runner.py:4674] "
        "temp=1.0, top_p=1.0, top_k=0, batch_changed=False",
        "(Worker_TP0 pid=635023) INFO 04-09 11:25:43 [hpu_model_runner.py:4675] Starting sampler warmup...",
        "(Worker_TP1 pid=635024)",
    ]
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN it stalled in compile, at the sampler warmup's start
    assert (report["verdict"], report["phase"]) == ("stalled", "compile"), report["reason"]
    assert root_text(report).endswith("Starting sampler warmup...")


# --- TPU: sglang-jax's precompile, tpu-inference's HBM profile -------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "last"),
    [
        (
            [
                "[2025-09-03 04:38:57] [EXTEND] begin to precompile",
                "[2025-09-03 04:38:57] [EXTEND] precompile (bs=128, num_tokens=128)",
            ],
            "[EXTEND] precompile (bs=128, num_tokens=128)",
        ),
        (
            [
                "[2025-09-03 04:38:57] [EXTEND] begin to precompile",
                "[2025-09-03 04:45:00] [EXTEND] precompile finished in 363 secs",
                "[2025-09-03 04:45:00] [DECODE] begin to precompile",
                "[2025-09-03 04:45:30] [DECODE] precompile (bs=64)",
            ],
            "[DECODE] precompile (bs=64)",
        ),
    ],
)
def test_sglang_jax_precompile_lines_are_compile(tmp_path: Path, lines: list[str], last: str) -> None:
    # GIVEN sglang-jax 0.0.1's precompile of its padding shapes, cut while a shape compiles
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN SGLang's compile step, the last shape where it stopped
    assert (report["system"], report["verdict"], report["phase"]) == ("sglang", "stalled", "compile"), report["reason"]
    assert root_text(report).endswith(last)


def test_tpu_inferences_memory_statistics_are_the_kv_cache_step(tmp_path: Path) -> None:
    # GIVEN vLLM on TPU (tpu-inference): the model loaded, then the worker's HBM profile, then the excerpt ends
    core = "(EngineCore_DP0 pid=2982916) INFO 10-20 00:02:{ss} [{file}] {msg}"
    lines = [
        core.format(
            ss="29",
            file="tpu_worker_jax.py:144",
            msg="Init worker | rank=0 | node_id=0 | is_driver_worker=True | hbm=[(0.0, 30.75)]GiB",
        ),
        core.format(ss="30", file="weight_utils.py:122", msg="Loading weights from /cache/model.safetensors"),
        core.format(ss="33", file="tpu_jax_runner.py:309", msg="Init model | hbm=[(1.11, 30.75)]GiB"),
        core.format(
            ss="33",
            file="tpu_worker_jax.py:166",
            msg="Memory statistics | total_hbm_limit_gb=30.75GiB | total_hbm_limit_cap_gb=27.67GiB | "
            "total_hbm_used_gb=1.11GiB | total_hbm_avail_gb=26.56GiB",
        ),
    ]
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN the furthest step is kv_cache, the memory statistics line where it stopped
    assert (report["verdict"], report["furthest_phase"]) == ("stalled", "kv_cache"), report["reason"]
    assert "Memory statistics | total_hbm_limit_gb=30.75GiB" in root_text(report)


# --- a py-spy dump pasted alone: its frames are indented four spaces under the thread line -------------------------

ASCEND_DUMP = [
    'Thread 703813 (idle): "MainThread"',
    "    replay (npu_graph_runner.py:78)",
    "    _forward_raw (model_runner.py:2097)",
    "    forward (model_runner.py:2040)",
]


CODE_BLOCK = "lines unwrapped from: a markdown indented code block"


def test_a_pyspy_dump_pasted_alone_is_no_markdown_code_block(tmp_path: Path) -> None:
    # GIVEN py-spy's text dump of one thread, its frames four spaces in under its thread line at the margin
    # WHEN analysed
    report = judge_text(tmp_path, "\n".join(ASCEND_DUMP) + "\n")
    # THEN the indentation is the dump's own: no envelope is taken off
    assert not any(CODE_BLOCK in note for note in report["notes"]), report["notes"]


def test_a_dump_indented_as_a_whole_is_still_a_code_block(tmp_path: Path) -> None:
    # GIVEN the same dump quoted as markdown's indented code block: every line, the thread line too, four spaces in
    lines = ["    " + line for line in ASCEND_DUMP]
    # WHEN analysed
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN the block's indentation comes off, and the dump is read as the one above
    assert any(CODE_BLOCK in note for note in report["notes"]), report["notes"]
    assert (report["verdict"], report["phase"]) == ("stalled", "serving"), report["reason"]


def test_a_stack_in_a_graph_replay_is_serving(tmp_path: Path) -> None:
    # GIVEN SGLang's scheduler on Ascend dumped by py-spy inside its NPU graph's replay (a decode step)
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(ASCEND_DUMP) + "\n")
    # THEN it is open in serving, the replay frame where its thread was
    assert (report["verdict"], report["phase"]) == ("stalled", "serving"), report["reason"]
    assert root_text(report).strip() == "replay (npu_graph_runner.py:78)"


# --- the GPU runtimes' and drivers' own failure lines ----------------------------------------------------------------


def test_an_xe_scheduler_job_timeout_in_dmesg_is_a_timeout(tmp_path: Path) -> None:
    # GIVEN `dmesg -T` of an Intel Arc GPU on the xe driver: the job timeout check, the timed-out job, the reset
    drm = "[Tue Aug  4 20:51:21 2026] xe 0000:2b:00.0: [drm] "
    lines = [
        drm + "Tile0: GT0: Check job timeout: seqno=1484958, lrc_seqno=1484958, guc_id=0, not started",
        drm + "Tile0: GT0: Timedout job: seqno=1484958, lrc_seqno=1484958, guc_id=0, flags=0x73 in no process [-1]",
        drm + "Xe device coredump has been created",
        drm + "Tile0: GT0: reset done",
    ]
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN a watchdog fired: timeout, the timed-out job its cause
    assert report["verdict"] == "timeout", report["reason"]
    assert "Tile0: GT0: Timedout job: seqno=1484958" in root_text(report)


def _milabench(text: str, pipe: str) -> str:
    return json.dumps({"event": "line", "data": text + "\n", "pipe": pipe})


ROCM_ABORT = (
    ":0:rocdevice.cpp            :3586: 93411680345 us:  Callback: Queue 0x77ef1a200000 aborting with error : "
    "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016"
)


def test_a_milabench_event_log_is_read_through_its_json_records(tmp_path: Path) -> None:
    # GIVEN milabench's JSON-lines event log: the benchmark's start, its stdout and stderr lines as `line` events
    # (escaped as json.dumps writes them), ROCm's queue callback aborting, the last record cut before its end
    records = [
        json.dumps({"event": "start", "data": {"command": ["python", "main.py"], "time": 1.0}, "pipe": None}),
        _milabench('step 1 "loss"\t0.5', "stdout"),
        _milabench(ROCM_ABORT, "stderr"),
        _milabench("VGPU(0x2ba18980) Queue(0x780d90008000) is idle", "stdout"),
        _milabench(ROCM_ABORT.replace("0x77ef1a200000", "0x77cd61e00000"), "stderr"),
        _milabench("VGPU(0x4dab20b0) Queue(0x766c18465000) is idle", "stdout")[:-12],
    ]
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(records) + "\n")
    # THEN the runtime's abort is read inside its record: aborted, its first queue's line the cause
    assert report["verdict"] == "aborted", report["reason"]
    assert root_text(report) == ROCM_ABORT


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ('step 1 \\"loss\\"\\t0.5\\n", "pipe": "stdout"}', 'step 1 "loss"\t0.5'),
        ('caf\\u00e9 \\ud83d\\ude00\\n", "pipe": "stderr"}', "café \U0001f600"),
        ("cut inside the record", "cut inside the record"),
        ("cut inside an escape \\", "cut inside an escape "),
        ('a path C:\\\\x", "pipe": "stdout"}', "a path C:\\x"),
    ],
)
def test_a_records_text_is_its_string_decoded(body: str, text: str) -> None:
    # GIVEN the rest of a JSON record after its text key's opening quote (whole, or cut by a paste)
    # WHEN its text is read
    # THEN it is the string up to its closing quote, JSON's escapes undone, its line end off
    assert json_text(body) == text


def test_glued_json_records_are_lines_of_their_own() -> None:
    # GIVEN TGI launcher JSON records glued on one line, each cut before its end, one nested object among them
    first = (
        '{"timestamp":"2024-11-27T20:59:06.987920Z","level":"INFO",'
        '"fields":{"message":"Waiting for shard to be ready..."},"spans":[{"'
    )
    nested = (
        '{"timestamp":"2024-11-27T20:59:07.000000Z","level":"INFO",'
        '"fields":{"message":"x","at":{"timestamp":"2024-11-27T20:59:07Z"}}}'
    )
    text = "anager" + first + first + nested
    # WHEN the line is read
    parts = [line.text for line in line_updates(Unwrapped(1, text), 0)]
    # THEN each record begins a line; the object nested as a value stays in its record
    assert parts == ["anager", first, first, nested]


def test_tgi_launcher_json_waiting_lines_are_read_per_rank(tmp_path: Path) -> None:
    # GIVEN TGI's launcher `--json-output`: shards 0 and 1 waiting to be ready, twice, records glued by a paste
    def waiting(second: str, rank: int) -> str:
        return (
            f'{{"timestamp":"2024-11-27T20:59:{second}.987920Z","level":"INFO",'
            '"fields":{"message":"Waiting for shard to be '
            f'ready..."}},"target":"text_generation_launcher","span":{{"rank":{rank},"name":"shard-manager"}},"spans":[{{"'
        )

    text = waiting("06", 0) + waiting("06", 1) + "\n" + waiting("16", 0) + waiting("16", 1) + "\n"
    # WHEN analysed after the fact
    report = judge_text(tmp_path, text)
    # THEN TGI's waiting lines are read, one rank each: the shards never got ready
    assert (report["system"], report["verdict"]) == ("tgi", "stalled"), report["reason"]
    assert report["ranks"] == ["rank 0", "rank 1"]
    assert "Waiting for shard to be ready..." in root_text(report)


# --- Xinference ---------------------------------------------------------------------------------------------------

XINFERENCE = [
    "2025-02-27 09:47:13,428 xinference.core.supervisor 10500 INFO     Xinference supervisor 0.0.0.0:40486 started",
    "2025-02-27 09:47:16,190 xinference.core.worker 10500 INFO     Connected to supervisor as a fresh worker",
    "2025-02-27 09:47:16,199 xinference.core.worker 10500 INFO     Xinference worker 0.0.0.0:40486 started",
    "2025-02-27 09:47:19,517 xinference.api.restful_api 10363 INFO     Starting Xinference at endpoint: http://0.0.0.0:9997",
]
UVICORN = (
    "2025-02-27 09:47:19,589 uvicorn.error 10363 INFO     Uvicorn running on http://0.0.0.0:9997 (Press CTRL+C to quit)"
)
LAUNCH = (
    "2025-02-27 09:57:37,408 xinference.core.worker 10500 INFO     "
    "[request 3813be7a-f4ae-11ef-bc85-9cc2c4bded3a] Enter "
    "launch_builtin_model, args: <xinference.core.worker.WorkerActor object at 0x7cb812bdd010>, kwargs: model_uid=q-0"
)


def test_xinference_up_and_handling_a_request_is_ready_and_serving(tmp_path: Path) -> None:
    # GIVEN Xinference's supervisor, worker and API started, uvicorn bound, then a launch request handled
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join([*XINFERENCE, UVICORN, LAUNCH]) + "\n")
    # THEN the server is ready and serving
    assert (report["system"], report["verdict"], report["furthest_phase"]) == ("xinference", "ready", "serving"), (
        report["reason"]
    )


def test_xinference_cut_before_uvicorn_bound_stalled_in_http_start(tmp_path: Path) -> None:
    # GIVEN Xinference's start-up up to `Starting Xinference at endpoint`, no uvicorn line
    # WHEN analysed after the fact
    report = judge_text(tmp_path, "\n".join(XINFERENCE) + "\n")
    # THEN it stalled while its API started
    assert (report["system"], report["verdict"], report["phase"]) == ("xinference", "stalled", "http_start"), report[
        "reason"
    ]
