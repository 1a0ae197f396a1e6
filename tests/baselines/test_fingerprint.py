"""Fingerprints: the setup facts read from a log's head, for SGLang and vLLM line forms."""

from __future__ import annotations

from logphase.baselines.fingerprint import Fingerprint, fingerprint_of_lines

SGLANG_REPR = (
    "[2026-04-20 22:41:39] server_args=ServerArgs(model_path='meta-llama/Llama-3.3-70B-Instruct', "
    "tokenizer_path='meta-llama/Llama-3.3-70B-Instruct', chat_template=None, tp_size=8, pp_size=1, dp_size=1, "
    "ep_size=1, speculative_algorithm='EAGLE3', speculative_draft_model_path='yuhuili/EAGLE3-LLaMA3.3-Instruct-70B', "
    "speculative_num_steps=3)"
)


def test_sglang_server_args_repr_gives_model_sizes_and_draft() -> None:
    # GIVEN the ServerArgs repr line of SGLang ≤0.5.15 and pynccl's version line
    lines = [SGLANG_REPR, "[2026-04-20 22:41:50 TP0] sglang is using nccl==2.21.5"]
    # WHEN the head is read
    fingerprint = fingerprint_of_lines(lines)
    # THEN every fact is there
    assert fingerprint == Fingerprint(
        system="sglang",
        model_path="meta-llama/Llama-3.3-70B-Instruct",
        tp_size=8,
        pp_size=1,
        dp_size=1,
        ep_size=1,
        speculative_algorithm="EAGLE3",
        draft_model_path="yuhuili/EAGLE3-LLaMA3.3-Instruct-70B",
        nccl_version="2.21.5",
    )


def test_sglang_dict_form_of_0_5_19_and_missing_sizes_default_to_one() -> None:
    # GIVEN the resolved-dict form of SGLang ≥0.5.19 without pp/ep sizes, and NCCL's own banner
    lines = [
        "[2026-09-04 10:00:00] server_args={'model_path': '/models/DeepSeek-V3', 'tp_size': 16, 'dp_size': 2, "
        "'speculative_algorithm': 'NEXTN', 'speculative_draft_model_path': None}",
        "NCCL version 2.27.3+cuda12.8",
    ]
    fingerprint = fingerprint_of_lines(lines)
    # THEN sizes the version does not print are 1, and None values are absent
    assert (
        fingerprint.model_path,
        fingerprint.tp_size,
        fingerprint.dp_size,
        fingerprint.pp_size,
        fingerprint.ep_size,
    ) == (
        "/models/DeepSeek-V3",
        16,
        2,
        1,
        1,
    )
    assert (fingerprint.speculative_algorithm, fingerprint.draft_model_path, fingerprint.nccl_version) == (
        "NEXTN",
        None,
        "2.27.3",
    )


def test_vllm_speculative_config_model_is_the_draft_not_the_target() -> None:
    # GIVEN vLLM's non-default args (draft model nested in speculative_config) and engine config line
    lines = [
        "(APIServer pid=1) INFO 09-22 12:15:30 [api_server.py:1896] vLLM API server version 0.10.2",
        "(APIServer pid=1) INFO 09-22 12:15:30 [utils.py:328] non-default args: {'speculative_config': "
        "{'method': 'eagle3', 'model': 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', 'num_speculative_tokens': 3}, "
        "'model': 'meta-llama/Llama-3.1-8B-Instruct', 'tensor_parallel_size': 4}",
        "(EngineCore_DP0 pid=2) INFO 09-22 12:15:35 [core.py:76] Initializing a V1 LLM engine (v0.10.2) with config: "
        "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=SpeculativeConfig(method='eagle3', "
        "model='yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', num_spec_tokens=3), tensor_parallel_size=4, "
        "pipeline_parallel_size=2, data_parallel_size=1",
    ]
    fingerprint = fingerprint_of_lines(lines)
    assert fingerprint == Fingerprint(
        system="vllm",
        version="0.10.2",
        model_path="meta-llama/Llama-3.1-8B-Instruct",
        tp_size=4,
        pp_size=2,
        dp_size=1,
        ep_size=1,
        speculative_algorithm="EAGLE3",
        draft_model_path="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    )


def test_gpu_name_and_count_from_nvidia_smi_lines_and_moe_config_path() -> None:
    # GIVEN `nvidia-smi -L` output at the top of a job log, and a fused-MoE config warning
    lines = [
        "GPU 0: NVIDIA H200 (UUID: GPU-1b2c)",
        "GPU 1: NVIDIA H200 (UUID: GPU-3d4e)",
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2)",
        "[2026-01-01 10:00:09 TP0] Using default MoE kernel config. Config file not found at "
        "/sgl/configs/E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8.json",
    ]
    fingerprint = fingerprint_of_lines(lines)
    assert (fingerprint.gpu_name, fingerprint.gpu_count) == ("NVIDIA H200", 2)
    assert fingerprint.describe() == "m TP2 on 2× NVIDIA H200"


def test_the_key_ignores_software_versions_but_not_the_setup() -> None:
    # GIVEN the same setup on two SGLang/NCCL versions, and the same model at another TP size
    base = Fingerprint(system="sglang", version="0.5.10", model_path="/m", tp_size=8, nccl_version="2.21.5")
    upgraded = Fingerprint(system="sglang", version="0.5.15", model_path="/m", tp_size=8, nccl_version="2.27.3")
    smaller = Fingerprint(system="sglang", version="0.5.10", model_path="/m", tp_size=4, nccl_version="2.21.5")
    # THEN an upgrade keeps its baselines, another TP size does not
    assert (base.key == upgraded.key, base.key == smaller.key) == (True, False)


def test_a_log_without_setup_lines_has_an_unknown_fingerprint() -> None:
    fingerprint = fingerprint_of_lines(["[2026-01-01 10:00:00 TP0] Load weight begin. avail mem=70.00 GB"])
    assert (fingerprint.known, fingerprint.describe(), fingerprint.tp_size) == (False, "unknown setup", None)
