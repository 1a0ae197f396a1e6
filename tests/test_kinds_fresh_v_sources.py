"""Lines the fresh-v batch left unread, each written from the format its system prints in the released source the
pack's rule cites: sglang-router's failed start, vLLM 0.7's engine-core exception, vLLM's sleep mode, and SGLang's
diffusion pipeline stages."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def test_sglang_router_that_could_not_start_crashed_at_launch(tmp_path: Path) -> None:
    # GIVEN the shell command and sglang_router/launch_router.py's `Error starting router: {e}` (0.1.1's
    # `[Router (Python)] %(asctime)s - %(levelname)s - %(message)s` logger)
    text = (
        "$ python -m sglang_router.launch_router\n"
        "[Router (Python)] 2025-01-09 00:28:10 - ERROR - Error starting router: argument 'worker_urls': "
        "'NoneType' object cannot be converted to 'Sequence'\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the router crashed at launch, its own error the cause
    assert (report["phase"], report["verdict"]) == ("launch", "crashed")
    assert root_text(report).startswith("[Router (Python)] 2025-01-09 00:28:10 - ERROR - Error starting router: ")


def test_vllm_07_engine_core_exception_cut_inside_its_traceback_is_the_crash(tmp_path: Path) -> None:
    # GIVEN a Ray actor's vLLM 0.7.x lines: `EngineCore hit an exception: %s` (v1/engine/core.py, the formatted
    # traceback in the same message), the paste cut inside `Traceback`
    text = (
        "(AsyncvLLMServer pid=729634) INFO 05-08 15:30:40 [core.py:58] Initializing a V1 LLM engine (v0.8.2) "
        "with config: model='Qwen/Qwen2.5-7B-Instruct'\n"
        "(AsyncvLLMServer pid=729634) ERROR 05-08 15:30:47 [core.py:390] EngineCore hit an exception: Traceb\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the engine crashed, and that line is the cause
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("[core.py:390] EngineCore hit an exception: Traceb")


def test_vllm_engine_put_to_sleep_by_an_rl_trainer_is_past_its_start_up(tmp_path: Path) -> None:
    # GIVEN only vLLM's sleep-mode lines (worker `Sleep mode freed ...`, executor `It took ... to fall asleep.`),
    # then a trainer's own line no pack knows
    text = (
        "INFO 12-08 19:50:16 [worker.py:152] Sleep mode freed 23.72 GiB memory, 29.27 GiB memory is still in use.\n"
        "INFO 12-08 19:50:16 [executor_base.py:211] It took 1.060974 seconds to fall asleep.\n"
        "[INFO:swift] Memory cleanup attempt 1: Freed 0.00 GB reserved, 0.00 GB allocated\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the engine had been built and used: serving
    assert (report["system"], report["phase"]) == ("vllm", "serving")


def test_vllm_executor_already_sleeping_warning_is_no_evidence_of_serving(tmp_path: Path) -> None:
    # GIVEN the executor's warning that it already sleeps, alone (a runtime operation, ignored)
    text = "(EngineCore_DP0 pid=441) WARNING 11-24 12:00:00 [abstract.py:402] Executor is already sleeping.\n"
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN nothing places the engine
    assert report["phase"] is None


def test_sglang_diffusion_request_stages_are_serving(tmp_path: Path) -> None:
    # GIVEN SGLang's diffusion runtime (`[%m-%d %H:%M:%S] ` prefix): its worker ready, a prompt's pipeline stages
    # started and finished (StageProfiler), the last one cut
    text = (
        "[03-04 12:21:38] Worker 0: Scheduler loop started.\n"
        "[03-04 12:21:38] Processing prompt 1/1: A futuristic cyberpunk city at night\n"
        "[03-04 12:21:38] Running pipeline stages: ['input_validation_stage', 'denoising_stage']\n"
        "[03-04 12:21:38] [InputValidationStage] started...\n"
        "[03-04 12:21:38] [InputValidationStage] finished in 0.0001 seconds\n"
        "[03-04 12:21:38] [DenoisingStage] started...\n"
        "[03-04 12:21:39] [DenoisingStage] finished i\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN the server was serving a request, no failure
    assert (report["system"], report["phase"]) == ("sglang", "serving")
    assert report["verdict"] not in ("crashed", "aborted", "timeout")


def test_a_failed_diffusion_stage_is_the_crash_while_serving(tmp_path: Path) -> None:
    # GIVEN a stage started, then StageProfiler's `[%s] Error during execution after %.4f ms: %s`
    text = (
        "[03-04 12:21:38] [DenoisingStage] started...\n"
        "[03-04 12:21:39] [DenoisingStage] Error during execution after 812.5000 ms: CUDA out of memory\n"
    )
    # WHEN judged
    report = judge_text(tmp_path, text)
    # THEN it crashed while serving, the stage's error the cause
    assert (report["phase"], report["verdict"]) == ("serving", "crashed")
    assert root_text(report).startswith("[03-04 12:21:39] [DenoisingStage] Error during execution after 812.5000 ms")
