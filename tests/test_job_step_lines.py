"""A job's own step lines: AReaL's step lines (areal 1.0.4), FunASR's checkpoint averaging, vllm-ascend's and
vLLM-Omni's engine work, and an offline vLLM run's printed outputs (vLLM's examples: `Prompt: …, Generated text: …`
after LLM.generate returned). Written from the formats the packs cite
and the labels' rules (fixtures/realworld/README.md), not from the tool's answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

OPEN = ("stalled", "progressing")

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
