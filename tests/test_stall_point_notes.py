"""Where an open log stopped (fixtures/realworld/README.md, `root_cause_line`: the last progress line): a line its
pack rule calls a note (a warning, a setting stated) is passed over back to the step before it; a step's end line
the paste cut while it was printed still says its step.
Fixture lines are written from the servers' own formats: SGLang's scheduler prefix and registry warning
(srt/models/registry.py `Ignore import error when loading {name}: {e}`), vLLM's logger prefix and its
graph-capture lines, NCCL's `host:pid:tid [dev] NCCL INFO` notes and the distributed-mode helper of
the vision repositories (util/misc.py `| distributed init (rank {}): {}`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json

DIST_END = "[2026-03-03 15:08:19 TP{tp}] Init torch distributed ends. elapsed=2.23 s, mem usage=0.00 GB"
IMPORT_WARNING = (
    "[2026-03-03 15:08:20 TP{tp}] Ignore import error when loading sglang.srt.models.{module}: "
    "No module named 'sgl_kernel'"
)
MODULES = ["glm_ocr", "glmasr", "lfm2", "nemotron_h_mtp"]

CAPTURE_BAR = "Capturing CUDA graph shapes: 100%|██████████| 67/67 [00:12<00:00,  5.31it/s]"
CAPTURE_END = (
    "(Worker_DP1_TP0 pid=222) INFO 03-12 14:47:18 [gpu_model_runner.py:5246] Graph capturing finished in 13 secs, "
    "took 0.55 GiB"
)

NCCL_NOTES = [
    "gpu-dev006:25486:25486 [0] NCCL INFO Bootstrap : Using [0]enp7s0:10.10.112.56<0>",
    "gpu-dev006:25486:25486 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
    "gpu-dev006:25486:25486 [0] NCCL INFO NET/IB : Using [0]mlx4_0:1/RoCE ; OOB enp7s0:10.10.112.56<0>",
    "gpu-dev006:25486:25486 [0] NCCL INFO Using network IB",
]


def _judge(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    _, report = run_json("analyze", "--post-mortem", str(log))
    return report


def _cause(report: dict[str, Any]) -> tuple[int, str]:
    cause = report["root_cause"]
    return cause["line"], cause["text"]


@pytest.mark.parametrize("warnings", [1, 2, 4])
def test_registry_import_warnings_after_the_dist_init_end_pass_back_to_it(tmp_path: Path, warnings: int) -> None:
    # GIVEN two SGLang ranks that ended torch distributed init, then `warnings` registry warnings (a module skipped)
    lines = [DIST_END.format(tp=0), DIST_END.format(tp=1)]
    lines += [IMPORT_WARNING.format(tp=index % 2, module=MODULES[index]) for index in range(warnings)]
    # WHEN the log, ending there, is judged
    report = _judge(tmp_path, lines)
    # THEN it is open in dist_init and its cause is the last step, TP1's dist-init end, whatever the warnings' count
    assert report["verdict"] == "stalled"
    assert _cause(report) == (2, DIST_END.format(tp=1))
    assert "reports no step" in str(report["reason"])


@pytest.mark.parametrize("cut", [10, 20, 28])
def test_an_end_line_the_paste_cut_after_its_first_words_is_the_cause(tmp_path: Path, cut: int) -> None:
    # GIVEN a vLLM worker's capture bar filled, then its `Graph capturing finished …` line cut after `cut` characters of
    # its message (the paste ends there)
    prefix_end = CAPTURE_END.index("Graph capturing")
    lines = [CAPTURE_BAR, CAPTURE_END[: prefix_end + cut]]
    # WHEN judged
    report = _judge(tmp_path, lines)
    # THEN the cut line, which still says which step ended, is the cause
    assert report["phase"] == "cuda_graph"
    assert _cause(report) == (2, lines[1])


def test_nccl_setup_notes_pass_back_to_the_scripts_distributed_init_line(tmp_path: Path) -> None:
    # GIVEN four ranks of a training script that each printed `| distributed init (rank N): env://`, then NCCL's
    # bootstrap, plugin and network notes (NCCL_DEBUG=INFO) and nothing more
    lines = [f"| distributed init (rank {rank}): env://" for rank in (3, 1, 0, 2)] + NCCL_NOTES
    # WHEN judged
    report = _judge(tmp_path, lines)
    # THEN the run is open in dist_init, and its last step is the last rank's init line, not a note after it
    assert report["phase"] == "dist_init"
    assert report["verdict"] == "stalled"
    assert _cause(report) == (4, "| distributed init (rank 2): env://")


DS = "[2025-03-07 23:55:16,883] [INFO] [{where}] {message}"


def test_deepspeeds_zero_settings_pass_back_to_the_optimizer_it_creates(tmp_path: Path) -> None:
    # GIVEN DeepSpeed's engine (engine.py log_dist) building its optimizer, then the ZeRO stage 1/2 optimizer's own
    # settings (stage_1_and_2.py `Reduce bucket size …`, `Allgather bucket size …`), and the paste ends
    lines = [
        DS.format(where="comm.py:677:init_distributed", message="Distributed backend already initialized"),
        DS.format(where="logging.py:128:log_dist", message="[Rank 0] DeepSpeed Basic Optimizer = DeepSpeedCPUAdam"),
        DS.format(where="logging.py:128:log_dist", message="[Rank 0] Creating torch.bfloat16 ZeRO stage 2 optimizer"),
        DS.format(where="stage_1_and_2.py:149:__init__", message="Reduce bucket size 500000000"),
        DS.format(where="stage_1_and_2.py:150:__init__", message="Allgather bucket size 500000000"),
    ]
    # WHEN judged
    report = _judge(tmp_path, lines)
    # THEN the last step is the ZeRO optimizer's creation, not a setting after it
    assert report["verdict"] == "stalled"
    assert _cause(report) == (3, lines[2])


def test_vllms_sampling_defaults_note_passes_back_to_the_engines_init_line(tmp_path: Path) -> None:
    # GIVEN vLLM's engine core done (core.py `init engine (profile, create kv cache, warmup model) took …`), then the
    # API server's note of the sampling defaults it took (serving_chat.py `Using default chat sampling params from …`)
    lines = [
        "(EngineCore_0 pid=1399537) INFO 08-19 14:58:40 [core.py:215] init engine (profile, create kv cache, warmup "
        "model) took 1.06 seconds",
        "(APIServer pid=1391815) INFO 08-19 14:58:41 [serving_responses.py:120] Using default chat sampling params "
        "from model: {'temperature': 0.6, 'top_p': 0.9}",
    ]
    # WHEN judged
    report = _judge(tmp_path, lines)
    # THEN the API server's start is the phase; the engine's init line, the last step, is the cause
    assert report["phase"] == "http_start"
    assert _cause(report) == (1, lines[0])
