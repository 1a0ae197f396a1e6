"""A job's own step lines: a counter a script prints after `step`, `epoch`, `iteration` or `batch` in a line no rule
reads (the lowest weight: `weak` rules), AReaL's step lines (areal 1.0.4), and an offline vLLM run's printed outputs
(vLLM's examples: `Prompt: …, Generated text: …` after LLM.generate returned). Written from the formats the packs cite
and the labels' rules (fixtures/realworld/README.md), not from the tool's answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import judge_text, root_text

OPEN = ("stalled", "progressing")

# A script's own prints around its training loop (DeepSpeed ZeRO-2, eight devices, realworld 496's shape): no logger,
# no stamp, each device says what it passed in the step.
DEVICES = (2, 0, 3, 1)


def _device_step_lines(step: int, stages: tuple[str, ...]) -> list[str]:
    return [f"pass {stage} on device {device} step {step}" for stage in stages for device in DEVICES]


def test_a_scripts_step_prints_are_the_jobs_steps_at_low_confidence(tmp_path: Path) -> None:
    # GIVEN four devices printing their stages of steps 41 and 42, the paste ending after step 42's backward pass
    lines = _device_step_lines(41, ("index selection", "forward", "backward"))
    lines += _device_step_lines(42, ("index selection", "forward", "backward"))
    # WHEN judged post-mortem
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN the job is in its steps (`serving`), open, its last step line the cause, and the tool says it guessed
    assert report["phase"] == "serving"
    assert report["verdict"] in OPEN
    assert root_text(report) == "pass backward on device 1 step 42"
    assert report["confidence"] == "low"
    assert "step counter" in report["reason"]


def test_interleaved_ranks_validation_batches_place_the_job_in_its_steps(tmp_path: Path) -> None:
    # GIVEN torchtitan's logger under torchrun's `[rankN]:` tags, each rank printing its own validation batches (a
    # debug print of the run's script), rank 1 ahead of rank 0, the paste cut inside rank 0's next prefix
    head = "[titan] 2025-08-21 11:19:52,{ms:03d} - root - INFO - [Validation Debug]  Rank {rank} batch {batch} {what}"
    lines = [
        "[rank1]:" + head.format(ms=968, rank=1, batch=87, what="Loss 12.241142272949219"),
        "[rank1]:" + head.format(ms=972, rank=1, batch=88, what="start"),
        "[rank0]:" + head.format(ms=905, rank=0, batch=84, what="Loss 12.281610488891602"),
        "[rank0]:" + head.format(ms=951, rank=0, batch=85, what="start"),
        "[rank0]:[titan] 2025-08-21 1",
    ]
    # WHEN judged post-mortem
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN both ranks are in the job's steps and the last whole step line is the cause
    assert report["phase"] == "serving"
    assert report["verdict"] in OPEN
    assert "Rank 0 batch 85 start" in root_text(report)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    word=st.sampled_from(["step", "Step", "iteration", "iter", "epoch", "Epoch", "batch", "global_step"]),
    sep=st.sampled_from([" ", "=", ": ", " #"]),
    count=st.integers(min_value=1, max_value=10**6),
)
def test_a_counter_never_moves_a_servers_start_up(tmp_path: Path, word: str, sep: str, count: int) -> None:
    # GIVEN a vLLM server loading its weights (0.8.5's lines), then a line no rule reads that holds a step counter
    text = (
        "INFO 05-16 13:12:16 [api_server.py:1043] vLLM API server version 0.8.5\n"
        "INFO 05-16 13:12:30 [gpu_model_runner.py:1329] Starting to load model meta-llama/Llama-3.1-8B-Instruct...\n"
        f"INFO 05-16 13:12:31 [custom.py:12] warming the cache, {word}{sep}{count}\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the server's own lines say where it is: the counter places nothing
    assert report["phase"] == "weight_load"
    assert report["furthest_phase"] == "weight_load"
    assert "step counter" not in report["reason"]


def test_a_counter_after_a_failure_leaves_the_failure_the_verdict(tmp_path: Path) -> None:
    # GIVEN a script's steps, a traceback that ends the process, and another device's step line printed after it
    text = (
        "\n".join(_device_step_lines(7, ("forward",))) + "\nTraceback (most recent call last):\n"
        '  File "/workspace/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "pass backward on device 3 step 7\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the failure decides: crashed, caused by its exception line
    assert report["verdict"] == "crashed"
    assert "an illegal memory access" in root_text(report)


@pytest.mark.parametrize(
    "line",
    [
        "batch_size = 32",
        "max_steps: 1000",
        "num_epochs 3",
        "Training batch size: 16",
        "Error in step 12: loss is nan",
        "step 12 timed out",
        "Warning: iteration 40 skipped",
        "  epoch                    =        3.0",
    ],
)
def test_settings_failures_and_summary_rows_are_no_steps(tmp_path: Path, line: str) -> None:
    # GIVEN a log of only lines that name a counter's word but report no step done (a setting, a failure, a metrics
    # table's padded row), each repeated
    text = f"{line}\n{line}\n"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN nothing places the run: no step counter read
    assert report["phase"] is None
    assert "step counter" not in report["reason"]


def test_a_trainers_end_summary_stays_finished(tmp_path: Path) -> None:
    # GIVEN transformers' end of training (trainer.py speed_metrics dict, then log_metrics' table with its padded rows)
    text = (
        "{'train_runtime': 2219.0, 'train_samples_per_second': 1.474, 'train_steps_per_second': 0.185, "
        "'train_loss': 0.7228, 'epoch': 3.0}\n"
        "***** train metrics *****\n"
        "  epoch                    =        3.0\n"
        "  train_loss               =     0.7228\n"
        "  train_runtime            = 0:36:58.55\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job finished: the table's `epoch` row is no step after its end
    assert report["verdict"] == "finished"


AREAL = "(AReaL) 20260409-03:03:{s} {logger} INFO: {message}"


def test_areal_weight_updates_and_cleared_batches_are_training_steps(tmp_path: Path) -> None:
    # GIVEN AReaL's RL steps as its loggers print them (areal 1.0.4: the engine's bracketed logger name holds spaces)
    lines = [
        AREAL.format(
            s="27.519",
            logger="[RemoteInfEngine Rank 0]",
            message="Loading weights from disk done in 4.78s. Respond time: 0.37s.",
        ),
        AREAL.format(
            s="27.676",
            logger="[RemoteInfEngine Rank 1]",
            message="Loading weights from disk done in 4.94s. Respond time: 0.42s.",
        ),
        AREAL.format(
            s="29.243",
            logger="SyncRPCServer",
            message="Cleared 174 batch shards. Stats: {'cleared_count': "
            "174, 'num_tensors': 366, 'total_bytes': 1666500}",
        ),
        AREAL.format(s="31.002", logger="StatsLogger", message="Epoch 1/1 Step 12/200 Train step 12/200 done."),
    ]
    # WHEN judged post-mortem
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    # THEN the job is in its steps, open, its last step line the cause, read by AReaL's rules (not a guess)
    assert report["phase"] == "serving"
    assert report["verdict"] in OPEN
    assert root_text(report).endswith("Train step 12/200 done.")
    assert "step counter" not in report["reason"]


VLLM_OFFLINE = (
    "INFO 05-16 13:12:16 [llm_engine.py:240] Initializing a V1 LLM engine (v0.8.5) with config: "
    "model='facebook/opt-125m'\n"
    "INFO 05-16 13:12:30 [gpu_model_runner.py:1329] Starting to load model facebook/opt-125m...\n"
    "INFO 05-16 13:12:33 [gpu_model_runner.py:1347] Model loading took 0.2389 GiB and 2.91 seconds\n"
    "INFO 05-16 13:12:41 [core.py:159] init engine (profile, create kv cache, warmup model) took 7.45 seconds\n"
    "Processed prompts: 100%|██████████| 4/4 [00:00<00:00, 13.06it/s, est. speed input: 84.92 toks/s, "
    "output: 208.99 toks/s]\n"
)
OUTPUTS = [
    "Prompt: 'Hello, my name is', Generated text: ' Joel, my dad is my friend and we are in a relationship. I am'",
    "Prompt: 'The capital of France is', Generated text: ' Paris, and the three major cities are Paris, Lyon'",
]


@pytest.mark.parametrize("dp", ["", "DP rank 1, "])
def test_an_offline_runs_printed_outputs_end_the_job(tmp_path: Path, dp: str) -> None:
    # GIVEN an offline vLLM run (basic.py, or data_parallel.py's per-rank outputs) that printed its outputs
    text = VLLM_OFFLINE + "".join(f"{dp}{line}\n" for line in OUTPUTS)
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job finished in its serving phase (LLM.generate answered every prompt); no cause named
    assert report["phase"] == "serving"
    assert report["verdict"] == "finished"


def test_outputs_alone_end_the_job(tmp_path: Path) -> None:
    # GIVEN only the outputs data_parallel.py printed (the paste dropped the engine's lines above them)
    text = "".join(f"DP rank 0, {line}\n" for line in OUTPUTS)
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job finished
    assert report["verdict"] == "finished"
    assert report["phase"] == "serving"


def test_a_failure_after_the_outputs_is_the_verdict(tmp_path: Path) -> None:
    # GIVEN an offline run's outputs, then a traceback the script raised after them (its own code after generate)
    text = (
        VLLM_OFFLINE + "".join(f"{line}\n" for line in OUTPUTS) + "Traceback (most recent call last):\n"
        '  File "/workspace/offline.py", line 41, in <module>\n'
        "    scores = evaluate(outputs)\n"
        "KeyError: 'answer'\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the failure decides, not the outputs printed before it
    assert report["verdict"] == "crashed"
    assert "KeyError: 'answer'" in root_text(report)


def test_funasrs_checkpoint_averaging_is_the_jobs_last_steps(tmp_path: Path) -> None:
    # GIVEN FunASR's end of training (bin/train.py: rank 0's average_checkpoints prints the list, then each missing
    # file it passes over), the paste cut inside the next item
    text = (
        "average_checkpoints: ['./outputs2/model.pt.ep5', './outputs2/model.pt.ep6', './outputs2/model.pt.ep7']\n"
        "Checkpoint file ./outputs2/model.pt.ep5 not found.\n"
        "Checkpoint file ./outputs2/model.pt.ep6 not found.\n"
        "Checkpoint file ./outputs2/mod\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job is in its steps, open, on the last whole item
    assert report["phase"] == "serving"
    assert report["verdict"] in OPEN
    assert root_text(report) == "Checkpoint file ./outputs2/model.pt.ep6 not found."


ASCEND = (
    "(Worker pid={pid}) (Worker_TP{tp}_EP{tp} pid={pid}) DEBUG 03-25 08:03:44 [model_runner_v1.py:1225] Running batch "
    "with cudagraph_mode: NONE, batch_descriptor: BatchDescriptor(num_tokens=4, num_reqs=None, uniform=False, "
    "has_lora=False, num_active_loras=0), should_ubatch: False, num_tokens_across_dp: None"
)


def test_ascend_workers_running_batches_are_serving(tmp_path: Path) -> None:
    # GIVEN vllm-ascend's workers at DEBUG, each running a batch of scheduled requests
    text = "".join(ASCEND.format(pid=549 + 98 * tp, tp=tp) + "\n" for tp in range(4))
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the engine is at its work: serving (the engine's own lines: an offline run prints them too)
    assert report["phase"] == "serving"


def test_omnis_summary_is_served_requests(tmp_path: Path) -> None:
    # GIVEN vLLM-Omni's orchestrator summary (pformat's lines, each logged under the prefix of the first)
    text = (
        "INFO 01-02 09:08:56 [omni.py:687] [Summary] {'e2e_requests': 1,\n"
        "INFO 01-02 09:08:56 [omni.py:687]  'e2e_total_time_ms': 39729.416370391846,\n"
        "INFO 01-02 09:08:56 [omni.py:687]  'e2e_total_tokens': 583,\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the requests were answered: serving
    assert report["phase"] == "serving"
