"""Which source files of each system count as its start-up, health, distributed and shutdown paths.

SGLang: the server entry points and launch (`srt/entrypoints/engine*.py`, `http_server*.py`, 0.3's
`srt/server.py`; not the request handlers of the OpenAI / Anthropic / gRPC APIs), the argument
checks that warn at start (`srt/server_args.py`), the managers that start and run ranks (scheduler,
tokenizer / detokenizer manager, data-parallel controller (0.2's `controller_single.py` /
`controller_multi.py`), TP worker), the model runner and loader
(`srt/model_executor/`, `srt/model_loader/`), distributed set-up (`srt/distributed/`), the KV pool
allocation (`srt/mem_cache/memory_pool.py`) and the helpers every one of them logs through
(`srt/utils.py`, `srt/utils/`).
vLLM: the server entry points (`entrypoints/openai/api_server.py`, `entrypoints/api_server.py`,
`entrypoints/launcher.py`, `entrypoints/cli/`, `entrypoints/utils.py`; not the request handlers), the
engines (`engine/`, `v1/engine/`), workers and executors (`worker/`, `v1/worker/`, `executor/`,
`v1/executor/`), distributed set-up (`distributed/` without the KV / EC transfer connectors of
disaggregated serving), the model loader, compilation (`compilation/`, the compile phase) and the
helpers (`utils.py`, `utils/__init__.py`, `v1/utils.py`).
torch: `torch/distributed/`'s top-level modules (c10d, rendezvous, run, launch), `elastic/` and
`launcher/`; not the parallelism libraries built on them (FSDP, tensor / pipeline parallel, RPC,
checkpointing), which a server's start-up does not go through.
Neither system's modules for TPU, XPU, HPU (Gaudi), CPU, NPU (Ascend), OpenVINO or Neuron back-ends
count (`tpu_model_runner.py`, `cpu/`, …): logphase reads NVIDIA / AMD GPU servers."""

from __future__ import annotations

import re

SYSTEM_PATHS: dict[str, re.Pattern[str]] = {
    "sglang": re.compile(
        r"^sglang/srt/(?:entrypoints/(?:engine|http_server|launch_server)[^/]*\.py$|server\.py$|server_args\.py$|managers/(?:scheduler[^/]*|tokenizer_manager|"
        r"detokenizer_manager|data_parallel_controller|controller_(?:single|multi)|tp_worker[^/]*)\.py$|model_executor/|model_loader/|"
        r"distributed/|mem_cache/memory_pool\.py$|utils\.py$|utils/)"
    ),
    "vllm": re.compile(
        r"^vllm/(?:entrypoints/(?:openai/api_server|api_server|launcher|utils)\.py$|entrypoints/cli/|engine/|"
        r"v1/engine/|worker/|v1/worker/|executor/|v1/executor/|distributed/(?!kv_transfer/|ec_transfer/)|"
        r"model_executor/model_loader/|compilation/|utils\.py$|utils/__init__\.py$|v1/utils\.py$)"
    ),
    "torch": re.compile(r"^torch/distributed/(?:[^/]+\.py$|elastic/|launcher/)"),
}
# the shared libraries whose strings hold c10d / ProcessGroupNCCL messages (torch's C++ side)
NATIVE_LIBRARIES = re.compile(r"^torch/lib/libtorch_(?:cuda|cpu)\.so$")
# the C++ strings worth keeping: messages of the distributed runtime, not every symbol name
NATIVE_MESSAGE = re.compile(
    r"(?:ProcessGroupNCCL|Watchdog|watchdog|NCCL|c10d|TCPStore|rendezvous|heartbeat|collective|"
    r"timed out|Timed out|timeout)"
)


# accelerators other than NVIDIA / AMD GPUs: their runners and workers are not what logphase reads
OTHER_ACCELERATORS = re.compile(r"/(?:tpu|xpu|hpu|cpu|npu|openvino|neuron|neuronx)(?:_[^/]*)?(?:\.py$|/)")


def in_scope(system: str, path: str) -> bool:
    """Whether the wheel member `path` is on the system's start-up / health / distributed / shutdown path."""
    pattern = SYSTEM_PATHS.get(system)
    return bool(pattern and path.endswith(".py") and pattern.search(path) and not OTHER_ACCELERATORS.search(path))


def system_of_wheel(name: str) -> str | None:
    """`vllm-0.11.0-cp38-abi3-….whl` → `vllm`."""
    project = name.split("-", 1)[0].lower()
    return project if project in SYSTEM_PATHS else None


def release_of_wheel(name: str) -> str:
    """`sglang-0.5.1-py3-none-any.whl` → `0.5.1`; a local version (`2.13.0+cpu`) keeps only its release."""
    return name.split("-")[1].split("+", 1)[0]
