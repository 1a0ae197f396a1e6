"""The LMDeploy and Ray packs next to the others: whose prefix reads a line, which system a log is."""

from __future__ import annotations

from pathlib import Path

from logphase.logs.matcher import explain
from logphase.packs.loading import load_packs
from tests.conftest import run_json


def test_lmdeploy_lines_are_read_by_their_own_prefix_not_the_generic_pylogging_one() -> None:
    # GIVEN an lmdeploy logger line (`ts - lmdeploy - LEVEL - file.py:N - msg`)
    line = "2024-12-02 10:00:02,114 - lmdeploy - INFO - model_agent.py:613 - MASTER_ADDR=127.0.0.1, MASTER_PORT=2950"
    # WHEN explained
    found = explain(line, load_packs(check_examples=False))
    # THEN the whole prefix is stripped and the dist_init rule reads the message
    assert found.prefix.prefixes == ("lmdeploy.prefix",)
    assert found.message.startswith("MASTER_ADDR=")
    assert [rule.id for rule, _ in found.matches] == ["lmdeploy.dist_init.steps"]


def test_vllm_and_sglang_actor_tags_stay_with_their_packs_ray_reads_the_others() -> None:
    packs = load_packs(check_examples=False)
    # GIVEN vLLM's Ray worker tag, SGLang's scheduler actor tag and a Serve replica's tag
    vllm = explain("(RayWorkerWrapper pid=2345, ip=10.0.0.12) INFO 12-20 10:25:30 model_runner.py:1094] x", packs)
    sglang = explain("(SchedulerActor pid=4242) [2026-04-05 10:00:00 TP1] Init torch distributed begin.", packs)
    serve = explain("(ServeReplica:default:LLM pid=5123) INFO 2024-12-02 10:00:20,101 default_LLM q3k2 -- hi", packs)
    # THEN each is read by its own system's prefix first
    assert vllm.prefix.prefixes[0] == "vllm.prefix.proc"
    assert sglang.prefix.prefixes[0] == "sglang.prefix.ray"
    assert serve.prefix.prefixes == ("ray.prefix.actor", "ray.prefix.serve")


def test_a_vllm_log_run_on_ray_is_still_vllm(tmp_path: Path) -> None:
    # GIVEN a vLLM V0 log whose executor is Ray: Ray's own lines are many, vLLM's fewer
    log = tmp_path / "vllm-on-ray.log"
    log.write_text(
        "INFO 12-20 10:25:20 api_server.py:712] vLLM API server version 0.6.6.post1\n"
        "2024-12-20 10:25:21,001\tINFO worker.py:1821 -- Started a local Ray instance.\n"
        "(raylet) [2024-12-20 10:25:21,500 W 88 88] (raylet) node_manager.cc:100: note\n"
        "2024-12-20 10:25:22,001\tINFO worker.py:1636 -- "
        "Connecting to existing Ray cluster at address: 10.0.0.1:6379...\n"
        "2024-12-20 10:25:22,501\tINFO worker.py:1821 -- Connected to Ray cluster.\n"
        "(RayWorkerWrapper pid=2345, ip=10.0.0.12) INFO 12-20 10:25:30 model_runner.py:1094] "
        "Starting to load model meta-llama/Llama-3.1-70B...\n"
    )
    # WHEN analysed
    _, report = run_json("analyze", str(log), "--post-mortem")
    # THEN Ray, a job pack, does not outvote the server
    assert report["system"] == "vllm"


def test_lmdeploy_uvicorn_lines_are_ready_but_sglangs_stay_http_start(tmp_path: Path) -> None:
    # GIVEN the same uvicorn lines after an lmdeploy engine, and after SGLang's schedulers
    uvicorn = (
        "INFO:     Application startup complete.\n"
        "INFO:     Uvicorn running on http://0.0.0.0:23333 (Press CTRL+C to quit)\n"
    )
    lmd = tmp_path / "lmd.log"
    lmd.write_text(
        "2024-12-02 10:00:02,114 - lmdeploy - INFO - async_engine.py:266 - "
        "input backend=turbomind, backend_config=None\n"
        "[TM][INFO] [BlockManager] block_size = 64 MB\n"
        "HINT:    Please open http://0.0.0.0:23333 in a browser for detailed api usage!!!\n" + uvicorn
    )
    sgl = tmp_path / "sgl.log"
    sgl.write_text(
        "[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB\n"
        "[2025-03-08 12:29:21 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=6.1 GB\n"
        + "".join(f"[2025-03-08 12:29:29] {line}\n" for line in uvicorn.splitlines())
    )
    # WHEN analysed
    _, lmd_report = run_json("analyze", str(lmd), "--post-mortem")
    _, sgl_report = run_json("analyze", str(sgl), "--post-mortem")
    # THEN LMDeploy (no warmup request) is ready; SGLang still waits for its warmup
    assert (lmd_report["system"], lmd_report["verdict"]) == ("lmdeploy", "ready")
    assert (sgl_report["system"], sgl_report["verdict"]) == ("sglang", "stalled")


# Triton 24.x writes each glog message as a quoted string (its quick-start docs and users' logs alike)
TRITON_QUOTED = [
    'I0516 13:09:20.101211 1 model_lifecycle.cc:472] "loading: tensorrt_llm:1"',
    "I0516 13:09:23.412009 1 model_lifecycle.cc:838] \"successfully loaded 'tensorrt_llm'\"",
    'I0516 13:09:23.557992 1 grpc_server.cc:2558] "Started GRPCInferenceService at 0.0.0.0:8001"',
    'I0516 13:09:23.558151 1 http_server.cc:4725] "Started HTTPService at 0.0.0.0:8000"',
    'I0516 13:09:23.607014 1 http_server.cc:358] "Started Metrics Service at 0.0.0.0:8002"',
    'W0516 13:09:24.689780 1 metrics.cc:631] "Unable to get power limit for GPU 0. Status:Success, value:0.000000"',
]


def test_triton_quoted_messages_are_read_as_the_unquoted_ones(tmp_path: Path) -> None:
    # GIVEN a Triton 24.x log whose model loaded and whose services started, every message in quotes
    log = tmp_path / "triton.log"
    log.write_text("\n".join(TRITON_QUOTED) + "\n")
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN ready: the services' lines are read through the quotes
    assert (report["verdict"], report["furthest_phase"]) == ("ready", "ready")


def test_triton_quoted_load_failure_is_a_crash_at_weight_load(tmp_path: Path) -> None:
    # GIVEN the same server whose model failed to load (model_lifecycle.cc's error, quoted)
    log = tmp_path / "triton.log"
    failed = (
        "E0516 13:09:22.902117 1 model_lifecycle.cc:641] \"failed to load 'tensorrt_llm' version 1: Internal: "
        'unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp"'
    )
    log.write_text("\n".join([TRITON_QUOTED[0], failed]) + "\n")
    # WHEN analysed post-mortem
    _, report = run_json("analyze", "--post-mortem", str(log))
    # THEN a crash whose cause is the load failure (line 2)
    assert (report["verdict"], report["root_cause"]["line"]) == ("crashed", 2)
