"""Download bars read from tqdm's and huggingface_hub's own formats (a file moving before the model is read: `launch`,
the phase the bar's words say), and the start-up steps of servers built beside SGLang and vLLM (sglang-jax's weight
loader, SGLang-Omni's pipeline, LMCache's multiprocess server, JetStream's warmup, `dynamo serve`, aiter's JIT
builds), each from its released source's message."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

OPEN = ("stalled", "progressing")  # a post-mortem reader cannot tell them apart in an excerpt: one class, "open"

# huggingface_hub's per-file bars (file_download.http_get: `desc=displayed_filename`, a name over 40 characters cut to
# `(…)` + its last 40, unit="B", unit_scale=True), finishing out of order as hf_transfer's parallel downloads do
HF_FILE_BARS = (
    "model-00008-of-00039.safetensors: 100%|██████████| 1.69G/1.69G [00:17<00:00, 96.1MB/s]\n"
    "model-00010-of-00039.safetensors: 100%|██████████| 1.69G/1.69G [00:21<00:00, 79.2MB/s]\n"
    "model-00009-of-00039.safetensors: 100%|██████████| 1.69G/1.69G [00:23<00:00, 72.4MB/s]\n"
    "(…)del.safetensors-00011-of-00039.safetensors:  37%|███▋      | 625M/1.69G [00:08<00:13, 80.3MB/s]\n"
)


def test_a_paste_of_hf_download_bars_alone_is_an_open_launch(tmp_path: Path) -> None:
    # GIVEN only huggingface_hub's per-file download bars, the last one still filling
    # WHEN judged post-mortem
    report = judge_text(tmp_path, HF_FILE_BARS)
    # THEN the model is still being fetched before any engine line: launch, open, the last bar the newest step
    assert report["phase"] == "launch"
    assert report["verdict"] in OPEN
    assert root_text(report).startswith("(…)del.safetensors-00011-of-00039.safetensors:  37%|")


def test_a_download_bar_the_paste_cut_inside_its_blocks_keeps_its_file_name(tmp_path: Path) -> None:
    # GIVEN the same bars, the paste ending inside the next file's bar (no count, no rate: its name is its first words)
    text = HF_FILE_BARS + "model.safetensors-00015-of-00039.safeten(…): 100%|████████████"
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the cut bar is the newest step: another file than the bar before it
    assert (report["phase"], report["verdict"] in OPEN) == ("launch", True)
    assert root_text(report).startswith("model.safetensors-00015-of-00039.safeten(…): 100%|")


def test_a_byte_bar_without_a_description_is_a_download(tmp_path: Path) -> None:
    # GIVEN a server's own downloader drawing one tqdm bytes bar over 17 files, its postfix naming the file and count
    text = (
        "Using model meta-llama/Meta-Llama-3.1-8B-Instruct with SHA 5206a32e0bd3067aef1ce90f5528ade7d866253f\n"
        "Downloading 17 files...\n"
        "  0%|          | 0.00/29.9G [00:00<?, ?B/s]\n"
        "  0%|          | 0.00/29.9G [00:00<?, ?B/s, file=.gitattributes, n=1/17]\n"
        "  0%|          | 57.5k/29.9G [00:00<95:05:17, 93.9kB/s, file=model-00001-of-00004.safetensors, n=7/17]\n"
        "  1%|          | 339M/29.9G [00:02<02:38, 201MB/s, file=model-00001-of-00004.safetensors, n=7/17]  \n"
        "  3%|▎         | 997M/29.9G [00:04<01:44, 299MB/s, file=model-00001-of-00004.safetensors, n=7/17]\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the download is under way: launch, open, its newest tick the step
    assert (report["phase"], report["verdict"] in OPEN) == ("launch", True)
    assert root_text(report) == (
        "  3%|▎         | 997M/29.9G [00:04<01:44, 299MB/s, file=model-00001-of-00004.safetensors, n=7/17]"
    )


@pytest.mark.parametrize(
    "line",
    [
        "Train:  12%|█▏        | 435/3659 [52:14<6:55:44,  7.74s/it]",  # a loop counting items: its words, not bytes
        "Loading checkpoint shards:  50%|█████     | 2/4 [00:03<00:03,  1.50s/it]",  # transformers' own bar
        "Epoch 1:  45%|████▌     | 10/22",  # cut inside its count: no file name, no bytes
        "language_model.model.norm.weight:  83%|█",  # a loader's bar over a parameter, cut: a name, but no file's
    ],
)
def test_a_bar_counting_items_is_no_download(tmp_path: Path, line: str) -> None:
    # GIVEN one bar that counts something other than bytes, or a cut bar whose description names no file
    # WHEN judged
    report = judge_text(tmp_path, line + "\n")
    # THEN it is not read as a download (launch)
    assert report["phase"] != "launch"


def test_hf_snapshot_fetch_bar_then_sglang_jax_weights(tmp_path: Path) -> None:
    # GIVEN sglang-jax on TPU: huggingface_hub's `Fetching 15 files` bar, then its WeightLoader's `[LOADING] MODEL
    # WEIGHTS` bar (desc from weight_utils.py, postfix file=…) and the model's `Qwen3 weights loaded successfully!`
    text = (
        "[2025-10-16 10:09:17] KV heads distribution for GQA model: original_kv_heads=8, tp_size=4, each device gets "
        "2 head(s), no replication needed, padding_strategy=replicate\n"
        "Fetching 15 files: 100%|██████████| 15/15 [00:00<00:00, 16173.09it/s]\n"
        "[2025-10-16 10:09:17] QWen3ForCausalLMModel config dtype: <class 'jax.numpy.bfloat16'>\n"
        "[LOADING] MODEL WEIGHTS:  40%|████      | 2/5 [00:04<00:06,  2.01s/file, "
        "file=model-00002-of-00005.safetensors]\n"
        "[LOADING] MODEL WEIGHTS: 100%|██████████| 5/5 [00:09<00:00,  1.98s/file, "
        "file=model-00005-of-00005.safetensors]\n"
        "[2025-10-16 10:10:34] Qwen3 weights loaded successfully!\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the weights are loaded and the start goes on: weight_load, open, the loaded line the newest step
    assert (report["phase"], report["verdict"] in OPEN) == ("weight_load", True)
    assert root_text(report) == "[2025-10-16 10:10:34] Qwen3 weights loaded successfully!"


def test_sglang_omni_stages_starting_under_uvicorn_are_steps_of_the_start(tmp_path: Path) -> None:
    # GIVEN SGLang-Omni's coordinator and pipeline lines (cli/serve.py's format), uvicorn's startup, then its stages
    text = (
        "2026-02-12 02:39:12,475 [INFO] sglang_omni.pipeline.coordinator: Coordinator started\n"
        "2026-02-12 02:39:12,475 [INFO] sglang_omni.serve.launcher: Pipeline 'qwen3_omni_text_first' started "
        "(6 stages)\n"
        "INFO:     Started server process [22122]\n"
        "INFO:     Waiting for application startup.\n"
        "2026-02-12 02:39:12,504 [INFO] sglang_omni.pipeline.control_plane: Stage preprocessing control plane started\n"
        "2026-02-12 02:39:12,505 [INFO] sglang_omni.pipeline.stage.runtime: Stage preprocessing started\n"
        "2026-02-12 02:39:12,505 [INFO] sglang_omni.pipeline.stage.runtime: Initializing shm for stage decode "
        "(device=cpu)\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the HTTP server is starting, and the newest step is the shm set-up begun for the decode stage (README's last
    # progress line: a step begun; realworld 1572, labelled by a collector who never ran logphase, names the same line
    # of its thinker stage)
    assert (report["phase"], report["verdict"] in OPEN) == ("http_start", True)
    assert root_text(report).endswith("Initializing shm for stage decode (device=cpu)")


def test_lmcache_mp_server_starting_its_controllers_inside_the_http_startup(tmp_path: Path) -> None:
    # GIVEN LMCache's multiprocess HTTP server (its logging format), uvicorn's startup and the cache server's steps
    text = (
        "[2026-06-18 05:10:52,396] LMCache INFO: Starting LMCache HTTP server on http://0.0.0.0:8080 "
        "(http_server.py:230:lmcache.v1.multiprocess.http_server)\n"
        "INFO:     Started server process [27]\n"
        "INFO:     Waiting for application startup.\n"
        "[2026-06-18 05:10:52,452] LMCache INFO: Starting LMCache HTTP server... (accelerator available: True) "
        "(http_server.py:68:lmcache.v1.multiprocess.http_server)\n"
        "[2026-06-18 05:10:52,492] LMCache INFO: Checking if shm capacity is larger than L1 request "
        "(server.py:265:lmcache.v1.multiprocess.server)\n"
        "[2026-06-18 05:10:56,674] LMCache INFO: Starting L1EvictionController... "
        "(eviction_controller.py:53:lmcache.v1.distributed.storage_controllers.eviction_controller)\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN http_start, open, the controller's start the newest step
    assert (report["phase"], report["verdict"] in OPEN) == ("http_start", True)
    assert "Starting L1EvictionController..." in root_text(report)


def test_jetstream_warmup_compiles_then_the_driver_threads(tmp_path: Path) -> None:
    # GIVEN JetStream's warmup (absl and Python logging both print each message) and the driver's generate thread
    text = (
        "I1106 18:30:12.872196 138308608845376 warmup_utils.py:108] ---------Prefill engine 0 compiled for prefill "
        "length 1024.---------\n"
        "2024-11-06 18:30:12,872 - root - INFO - ---------Prefill engine 0 compiled for prefill length 1024.---------\n"
        "2024-11-06 18:30:13,011 - root - INFO - ---------Prefill engine 0 compiled for prefill length 64.---------\n"
        "I1106 18:30:13.011122 138310185887296 warmup_utils.py:108] ---------Prefill engine 0 compiled for prefill "
        "length 64.---------\n"
        "2024-11-06 18:30:32,060 - root - INFO - ---------Generate params 0 loaded.---------\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the warmup was reached, the start goes on, the generate thread's params the newest step
    assert (report["system"], report["phase"], report["verdict"] in OPEN) == ("jetstream", "warmup", True)
    assert root_text(report).endswith("---------Generate params 0 loaded.---------")


def test_dynamo_serve_graph_started_then_terminal_signals(tmp_path: Path) -> None:
    # GIVEN `dynamo serve graphs.agg:Frontend` (circus' arbiter and watchers, Dynamo's `Starting %s (Press CTRL+C to
    # quit)`), then the terminal's resize signals circus logs
    text = (
        "2025-04-27T06:45:57.810Z  INFO arbiter.start: Starting master on pid 508   \n"
        "2025-04-27T06:45:57.834Z  INFO watcher._start: dynamo_Processor started   \n"
        "2025-04-27T06:45:57.849Z  INFO serving.<lambda>: Starting graphs.agg:Frontend (Press CTRL+C to quit)   \n"
        "2025-04-27T06:45:59.673Z  INFO sighandler.signal: Got signal SIG_WINCH   \n"
        "2025-04-27T06:45:59.680Z  INFO sighandler.signal: Got signal SIG_WINCH   \n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the graph's processes started: launch, open, Dynamo's line the newest step
    assert (report["phase"], report["verdict"] in OPEN) == ("launch", True)
    assert "Starting graphs.agg:Frontend (Press CTRL+C to quit)" in root_text(report)


def test_aiter_ranks_waiting_on_another_ranks_jit_build(tmp_path: Path) -> None:
    # GIVEN aiter's type-hint notices from each local process, then one waiting on the build lock another holds
    text = (
        "[aiter] type hints mismatch, override to --> rope_bwd_impl(arg0: torch.Tensor, arg1: torch.Tensor) -> None\n"
        * 4
        + "[aiter] start build [module_rope_general_bwd] under /opt/aiter/aiter/jit/build/module_rope_general_bwd\n"
        + "[aiter] waiting for baton release at /opt/aiter/aiter/jit/build/lock_module_rope_general_bwd\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN a JIT build is under way: compile, open, the wait the newest step
    assert (report["phase"], report["verdict"] in OPEN) == ("compile", True)
    assert root_text(report).startswith("[aiter] waiting for baton release at ")
