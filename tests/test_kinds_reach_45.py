"""How far a start reached, told by lines each written from its system's released source: vLLM 0.4.1-0.4.2 find the
NCCL library at the import of their worker module (an absolute path) where 0.4.3 on find it as a communicator is
made (a bare soname); vLLM 0.7 prints SGLang's ignorable-error words at an import of its own; TGI's launcher prints
its context-length defaults before its download; DeepSpeed's engine prints its configuration as a dump; verl's
TaskRunner prints its config first; ParlAI's distributed workers log under their own prefix; CANN's EI0002 is an
HCCL collective that waited out its timeout (fixtures/realworld/README.md: the furthest phase the log shows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text

_VLLM = "{level} 05-29 21:12:{second:02d} {where}] {message}\n"


def _vllm(second: int, where: str, message: str, level: str = "INFO") -> str:
    return _VLLM.format(level=level, second=second, where=where, message=message)


_ENGINE = (
    "Initializing an LLM engine (v0.4.2) with config: model='/models/llama-2-7b', speculative_config=None, "
    "tokenizer='/models/llama-2-7b', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
    "tokenizer_revision=None, trust_remote_code=False, dtype=torch.float16, max_seq_len=4096, "
    "download_dir=None, load_format=auto, tensor_parallel_size=1, disable_custom_all_reduce=False, "
    "quantization=None, enforce_eager=False, kv_cache_dtype=auto, seed=0)"
)


def _vllm_042_head(library: str) -> str:
    return (
        _vllm(40, "llm_engine.py:100", _ENGINE)
        + _vllm(40, "utils.py:660", f"Found nccl from library {library}")
        + _vllm(41, "selector.py:27", "Using FlashAttention-2 backend.")
    )


@pytest.mark.parametrize(
    "library", ["/root/.config/vllm/nccl/cu12/libnccl.so.2.18.1", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"]
)
def test_vllm_042_finds_nccl_at_its_worker_modules_import_a_launch_note(tmp_path: Path, library: str) -> None:
    # GIVEN vLLM 0.4.2 starting: its engine config, pynccl's module-level find_nccl_library (an absolute path: the
    # vllm-nccl package's or ldconfig's), the attention backend chosen as the worker is built; then nothing
    text = _vllm_042_head(library)
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN no communicator was made yet: launch, stalled, the engine's start the last step (the note is no step)
    assert (report["furthest_phase"], report["verdict"]) == ("launch", "stalled")
    assert "Initializing an LLM engine (v0.4.2)" in root_text(report)


def test_a_bare_soname_is_the_communicators_own_search_dist_init(tmp_path: Path) -> None:
    # GIVEN the same head, the library named as 0.4.3 on name it (NCCLLibrary's constructor, a communicator made)
    text = _vllm_042_head("libnccl.so.2")
    # WHEN judged THEN the line says dist_init, as before
    assert judge_text(tmp_path, text)["furthest_phase"] == "dist_init"


_RAY_WORKER = "(RayWorkerWrapper pid=752474) "
_IGNORABLE = "The following error message 'operation scheduled before its operands' can be ignored."


def test_vllms_ignorable_error_words_are_printed_at_an_import_not_in_a_load(tmp_path: Path) -> None:
    # GIVEN a vLLM 0.7 Ray worker choosing the Triton MLA backend, whose decode kernels' module prints the words as
    # it is imported
    text = (
        _RAY_WORKER
        + "INFO 02-27 23:02:26 __init__.py:207] Automatically detected platform cuda.\n"
        + _RAY_WORKER
        + "INFO 02-27 23:02:28 cuda.py:160] Using Triton MLA backend.\n"
        + _RAY_WORKER
        + f"WARNING 02-27 23:02:34 triton_decode_attention.py:44] {_IGNORABLE}\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the worker is still in its launch: no weight was loading
    assert report["furthest_phase"] == "launch"


def test_sglangs_ignorable_error_words_stay_in_its_load(tmp_path: Path) -> None:
    # GIVEN SGLang 0.4 ranks that began loading and printed the words on their own prefix
    text = (
        "[2025-03-04 00:24:49 TP0] Init torch distributed ends. mem usage=0.22 GB\n"
        f"[2025-03-04 00:24:50 TP0] {_IGNORABLE}\n"
    )
    # WHEN judged THEN the words are SGLang's load note, as before
    assert judge_text(tmp_path, text)["furthest_phase"] == "weight_load"


_TGI = "2025-03-11T06:56:{second:02d}.{us:06d}Z  {level} text_generation_launcher: {message}\n"


def _tgi(second: int, message: str, level: str = "INFO") -> str:
    return _TGI.format(second=second, us=640185, level=level, message=message)


_DEFAULTS = (
    "Model supports up to 131072 but tgi will now set its default to 4096 instead. This is to save VRAM by refusing "
    "large prompts in order to allow more users on the same hardware. You can increase that size using "
    "`--max-batch-prefill-tokens=131122 --max-total-tokens=131072 --max-input-tokens=131071`."
)


def test_tgis_context_length_defaults_are_its_launch(tmp_path: Path) -> None:
    # GIVEN TGI's launcher reading the model's config (its hub token note first, not the launcher's), its defaults,
    # then a warning and the paste cut inside the next stamp
    text = (
        '2025-03-11T06:56:10.640073Z  INFO hf_hub: Token file not found "/data/token"\n'
        + _tgi(10, _DEFAULTS)
        + _tgi(10, "Default `max_input_tokens` to 4095")
        + _tgi(10, "Default `max_total_tokens` to 4096")
        + "2025-03-11T06:56:10.656063"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the launcher started and reached no download: launch, open, no failure
    assert report["furthest_phase"] == "launch"
    assert report["verdict"] in ("stalled", "progressing")


def test_tgis_defaults_never_pull_a_later_phase_back(tmp_path: Path) -> None:
    # GIVEN the defaults followed by the download process's start (TGI's weight_load)
    text = (
        _tgi(10, _DEFAULTS)
        + "2025-03-11T06:56:11.000000Z  INFO download: text_generation_launcher: Starting download process.\n"
    )
    # WHEN judged THEN the later line decides
    assert judge_text(tmp_path, text)["furthest_phase"] == "weight_load"


_DS = "[2024-03-01 04:51:13,{ms:03d}] [INFO] [{where}] {message}\n"
_DS_CONFIG = [
    "DeepSpeedEngine configuration:",
    "  optimizer_name ............... adamw",
    "  prescale_gradients ........... False",
    "  scheduler_name ............... WarmupLR",
    "  scheduler_params ............. {'warmup_min_lr': 0, 'warmup_max_lr': 5e-05, 'warmup_num_steps': 0}",
]


def _ds_config() -> str:
    return "".join(
        _DS.format(ms=576, where="config.py:964:print" if i else "config.py:960:print", message=line)
        for i, line in enumerate(_DS_CONFIG)
    )


def test_deepspeeds_configuration_print_is_its_engine_started(tmp_path: Path) -> None:
    # GIVEN only DeepSpeed's engine configuration dump, the paste cut inside its next line
    text = _ds_config() + "[2024-03-01 04:51:13,576] [INFO] [config.py:964:print]   sp"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the engine's start is shown and nothing more: launch, open
    assert report["furthest_phase"] == "launch"
    assert report["verdict"] in ("stalled", "progressing")


def test_deepspeeds_configuration_dump_is_passed_over_to_the_step_before_it(tmp_path: Path) -> None:
    # GIVEN DeepSpeed's process group init, then its configuration dump
    text = (
        _DS.format(
            ms=100,
            where="comm.py:683:init_distributed",
            message="Initializing TorchBackend in DeepSpeed with backend nccl",
        )
        + _ds_config()
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the dump neither pulls the phase back nor is the last progress: the init line is (README, dumps)
    assert report["furthest_phase"] == "dist_init"
    assert root_text(report).endswith("Initializing TorchBackend in DeepSpeed with backend nccl")


_TASK_RUNNER = "(TaskRunner pid=293777) "


def test_verls_task_runner_config_dump_is_its_launch(tmp_path: Path) -> None:
    # GIVEN verl's TaskRunner printing its host, then pprint's dump of its config (keys sorted: actor_rollout_ref first)
    text = (
        _TASK_RUNNER
        + "TaskRunner hostname: gpu-node-1, PID: 293777\n"
        + _TASK_RUNNER
        + "{'actor_rollout_ref': {'actor': {'checkpoint': {'contents': ['model',\n"
        + _TASK_RUNNER
        + "                                                             'optimizer',\n"
        + _TASK_RUNNER
        + "                                 'clip_ratio': 0.2,\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the run started: launch, open
    assert report["furthest_phase"] == "launch"
    assert report["verdict"] in ("stalled", "progressing")


def test_a_dict_dump_of_other_keys_is_no_verl_line(tmp_path: Path) -> None:
    # GIVEN another actor's dict print WHEN judged THEN nothing says a phase
    text = _TASK_RUNNER + "{'answer': 'Levni Yilmaz', 'index': 97}\n"
    assert judge_text(tmp_path, text)["furthest_phase"] is None


_PARLAI = "{rank}{stamp} {level:<8} | {message}\n"


def _parlai(stamp: str, message: str, rank: int | None = None, level: str = "INFO") -> str:
    prefix = "" if rank is None else f"rank:{rank:3d} | "
    return _PARLAI.format(rank=prefix, stamp=stamp, level=level, message=message)


def _parlai_hosts() -> str:
    return _parlai("2020-12-30 05:11:59,533", "Initializing host node-1 as rank 1, main is node-0") + _parlai(
        "2020-12-30 05:12:00,947", "Initializing host node-0 as rank 0, main is node-0"
    )


def test_parlais_distributed_group_initialized_is_dist_init(tmp_path: Path) -> None:
    # GIVEN ParlAI's hosts under slurm, then each rank's group initialized (rank 0 verbose: both prefixed), then
    # rank 0 building its dictionary and going quiet
    text = (
        _parlai_hosts()
        + _parlai("2020-12-30 06:29:10,696", "Distributed group initialized", rank=0)
        + _parlai("2020-12-30 06:29:10,696", "Distributed group initialized", rank=1)
        + _parlai("2020-12-30 06:29:10,954", "building dictionary first...", rank=0)
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN init_process_group returned on both ranks: dist_init, stalled, no rank behind the other
    assert (report["furthest_phase"], report["verdict"]) == ("dist_init", "stalled")
    assert report["culprit_ranks"] == []


def test_parlais_hosts_alone_are_its_launch(tmp_path: Path) -> None:
    # GIVEN only the hosts' lines (the group not initialized yet) WHEN judged
    report = judge_text(tmp_path, _parlai_hosts())
    # THEN launch: the rendezvous of hosts is the launcher's step, not a process group
    assert report["furthest_phase"] == "launch"


_EI0002 = (
    "EI0002: [PID: 198748] 2025-03-26-13:49:01.670.614 The wait execution of the Notify register times out. Reason: "
    "The Notify register has not received the Notify record from remote rank: [unknown]. base information: "
    "[streamID:[293579240], taskID[9865], tag[Broadcast_172.16.38.219%eth0_60000_0_1742963775856197], AlgType(level "
    "0-1-2):[fullmesh-H-D-ring].]. task information: []. group information: [group:[172.16.38.219%eth0_60000_0_17429"
    "63775856197], user define information[], rankSize[8], rankId[6].]"
)
_POSSIBLE = (
    "        Possible Cause: 1. An exception occurs during the execution on some NPUs in the cluster. As a result, "
    "collective communication operation failed.2. The execution speed on some NPU in the cluster is too slow to "
    "complete a communication operation within the timeout interval. (default 1800s, You can set the interval by "
    "using HCCL_EXEC_TIMEOUT.)"
)


@pytest.mark.parametrize("prefix", ["", "(train pid=8464) "])
def test_canns_notify_wait_timeout_is_a_collective_timing_out(tmp_path: Path, prefix: str) -> None:
    # GIVEN CANN's EI0002 report (bare, or under a Ray actor's prefix) and its possible causes
    text = prefix + _EI0002 + "\n" + prefix + _POSSIBLE + "\n"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN a collective of a live communicator waited out HCCL_EXEC_TIMEOUT: timeout, dist_init reached
    assert (report["furthest_phase"], report["verdict"]) == ("dist_init", "timeout")
    assert "The wait execution of the Notify register times out." in root_text(report)


_HUB_BARS = [
    "LICENSE-MODEL: 100%|██████████| 13.8k/13.8k [00:00<00:00, 36.3MB/s]",
    ".gitattributes: 100%|██████████| 1.52k/1.52k [00:00<00:00, 5.99MB/s]",
    "inference/configs/config_16B.json: 100%|██████████| 417/417 [00:00<00:00, 1.63MB/s]",
    "README.md: 100%|██████████| 24.0k/24.0k [00:00<00:00, 4.02MB/s]",
]


def test_hub_file_bars_alone_show_a_started_program(tmp_path: Path) -> None:
    # GIVEN only huggingface_hub's bars of a snapshot's files (each desc the repo's file name)
    text = "\n".join(_HUB_BARS) + "\n"
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the program that asked for them started: launch, open, the last file's bar the last progress
    assert report["furthest_phase"] == "launch"
    assert report["verdict"] in ("stalled", "progressing")
    assert root_text(report).startswith("README.md: 100%|")


@pytest.mark.parametrize(
    "bar", ["Loading: 100%|██████████| 4/4 [00:03<00:00,  1.03it/s]", "Epoch 1: 100%|██████████| 8/8 [00:01<00:00]"]
)
def test_a_bar_named_by_no_file_is_no_hub_download(tmp_path: Path, bar: str) -> None:
    # GIVEN a bar whose description is a word, no file name WHEN judged THEN it says no launch of its own
    assert judge_text(tmp_path, bar + "\n")["furthest_phase"] != "launch"
