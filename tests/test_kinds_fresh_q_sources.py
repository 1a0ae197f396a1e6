"""Lines the fresh-q batch left unread or misread, each written from the format its system prints in the released
source the pack's rule cites: vLLM's model-load line behind its process tag alone, its engine core's input dump
when a model step raised, its engine-init line cut after the number; Ray's C++ terminate handler and the pending
demands of `ray status`."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def test_the_model_load_line_behind_vllms_process_tag_alone_places_weight_load(tmp_path: Path) -> None:
    # GIVEN vLLM's engine core tag (`(EngineCore pid=N) `) and gpu_model_runner.py's `Starting to load model %s...`,
    # the logger's level and time gone from the paste, and nothing after it
    report = judge_text(
        tmp_path,
        "(EngineCore pid=115) Starting to load model unsloth/Qwen3-VL-32B-Instruct-bnb-4bit...\n",
    )
    # WHEN judged post-mortem THEN the engine was loading its weights, and no failure is claimed
    assert report["phase"] == "weight_load"
    assert report["verdict"] in {"stalled", "progressing"}


def test_the_model_load_words_without_any_vllm_prefix_place_nothing(tmp_path: Path) -> None:
    # GIVEN the same words with neither vLLM's tag nor its logger's prefix (anyone's print)
    report = judge_text(tmp_path, "Starting to load model unsloth/Qwen3-VL-32B-Instruct-bnb-4bit...\n")
    # WHEN judged THEN no vLLM phase is claimed from them
    assert report["phase"] != "weight_load"


def test_the_engine_cores_input_dump_is_a_failure_while_serving(tmp_path: Path) -> None:
    # GIVEN shm_broadcast's hang notice, then vllm 0.13.0 logging_utils/dump_input.py's `Dumping input data for V1
    # LLM engine (v%s) with config: %s, ` (printed only when the engine core's model step raised), cut there
    report = judge_text(
        tmp_path,
        "(EngineCore_DP0 pid=618971) INFO 02-22 05:56:11 [shm_broadcast.py:542] No available shared memory "
        "broadcast block found in 60 seconds. This typically happens when some processes are hanging or doing "
        "some time-consuming work (e.g. compilation, weight/kv cache quantization).\n"
        "(EngineCore_DP0 pid=618971) ERROR 02-22 05:57:11 [dump_input.py:72] Dumping input data for V1 LLM engine "
        "(v0.13.0) with config: model='/models/DeepSeek-V3.2/', speculative_config=None, \n",
    )
    # WHEN judged THEN a serving engine's step failed, and the dump is the cause (nothing else says what)
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")
    assert "Dumping input data for V1 LLM engine (v0.13.0)" in root_text(report)


def test_the_input_dump_gives_way_to_the_exception_it_precedes(tmp_path: Path) -> None:
    # GIVEN the dump, then core.py's `EngineCore encountered a fatal error.` and the re-raised exception's traceback
    report = judge_text(
        tmp_path,
        "(EngineCore_DP0 pid=441) ERROR 02-22 05:57:11 [dump_input.py:72] Dumping input data for V1 LLM engine "
        "(v0.13.0) with config: model='m', \n"
        "(EngineCore_DP0 pid=441) ERROR 02-22 05:57:11 [core.py:866] EngineCore encountered a fatal error.\n"
        "(EngineCore_DP0 pid=441) ERROR 02-22 05:57:11 [core.py:866] Traceback (most recent call last):\n"
        '(EngineCore_DP0 pid=441) ERROR 02-22 05:57:11 [core.py:866]   File "/v/core.py", line 857, in run\n'
        "(EngineCore_DP0 pid=441) ERROR 02-22 05:57:11 [core.py:866]     self._process_engine_step()\n"
        "(EngineCore_DP0 pid=441) ERROR 02-22 05:57:11 [core.py:866] RuntimeError: CUDA error: an illegal memory "
        "access was encountered\n",
    )
    # WHEN judged THEN the exception is the cause, not the dump announcing it
    assert report["verdict"] == "crashed"
    assert "RuntimeError: CUDA error: an illegal memory access was encountered" in root_text(report)


def test_the_engine_init_line_cut_after_its_number_is_still_read(tmp_path: Path) -> None:
    # GIVEN vLLM's graph capture end, then core.py's `init engine (profile, create kv cache, warmup model) took
    # %.2f seconds` cut by the paste after the number
    report = judge_text(
        tmp_path,
        "INFO 04-21 22:56:58 [gpu_model_runner.py:1608] Graph capturing finished in 11412 secs, took 1.31 GiB\n"
        "INFO 04-21 22:58:22 [core.py:162] init engine (profile, create kv cache, warmup model) took 11629.91\n",
    )
    # WHEN judged THEN the engine-init line is read (the last progress, named as where it stopped), no failure
    assert report["verdict"] in {"stalled", "progressing"}
    assert "init engine (profile, create kv cache, warmup model) took 11629.91" in root_text(report)


def test_rays_terminate_handler_is_an_abort(tmp_path: Path) -> None:
    # GIVEN a Ray worker's `Unhandled exception: <type>. what(): <what>` (ray::TerminateHandler in logging.cc,
    # the words in ray 2.6.3's _raylet.so) and its `Stack trace: ` line, after vLLM's engine config
    report = judge_text(
        tmp_path,
        "INFO 08-25 00:42:36 llm_engine.py:70] Initializing an LLM engine with config: model='m', tokenizer='m'\n"
        "(pid=5623) [2023-08-25 00:42:40,265 E 5623 7733] logging.cc:97: Unhandled exception: "
        "N5boost10wrapexceptINS_6system12system_errorEEE. what(): thread: Resource temporarily unavailable "
        "[system:11]\n"
        "(pid=5623) [2023-08-25 00:42:40,287 E 5623 7733] logging.cc:104: Stack trace: \n",
    )
    # WHEN judged THEN the worker aborted at launch, the unhandled exception the cause
    assert (report["verdict"], report["phase"]) == ("aborted", "launch")
    assert "what(): thread: Resource temporarily unavailable" in root_text(report)


def test_a_watchdog_timeout_in_the_terminate_handlers_what_stays_a_timeout(tmp_path: Path) -> None:
    # GIVEN Ray's terminate handler quoting torch's watchdog exit, whose what() holds the collective timeout
    report = judge_text(
        tmp_path,
        "(WorkerDict pid=230966) [2025-03-14 14:33:45,164 E 230966 231591] logging.cc:113: Unhandled exception: "
        "N3c1016DistBackendErrorE. what(): [PG 0 (default_pg) Rank 0] Process group watchdog thread terminated "
        "with exception: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing "
        "out.\n",
    )
    # WHEN judged THEN the watchdog's timeout is the reading (the abort is its consequence)
    assert report["verdict"] == "timeout"


def test_a_pending_placement_group_in_ray_status_places_launch_and_claims_no_cause(tmp_path: Path) -> None:
    # GIVEN `ray status` (ray 2.6.3 autoscaler/_private/util.py format_info_string) with one pending placement
    # group under Demands, and nothing else
    report = judge_text(
        tmp_path,
        "======== Autoscaler status: 2024-09-23 01:17:18.277326 ========\n"
        "Node status\n"
        "---------------------------------------------------------------\n"
        "Active:\n"
        " 1 ray.head.default\n"
        "Pending:\n"
        " (no pending nodes)\n"
        "Demands:\n"
        " {'CPU': 2.0} * 1 (SPREAD): 1+ pending placement groups\n",
    )
    # WHEN judged THEN what asked for it waits at launch; the snapshot is no hang report of a log's, no failure
    assert report["phase"] == "launch"
    assert report["verdict"] in {"stalled", "progressing"}


def test_a_failed_kv_pull_of_a_pd_decode_worker_is_serving_not_a_failure(tmp_path: Path) -> None:
    # GIVEN decode workers' `pulling kv_caches for %s failed: %s` (vllm 0.34.0 mooncake_connector.py, the prefill
    # peer's `Timeout waiting for P side ready.`): the requests' blocks are marked invalid and the worker goes on
    report = judge_text(
        tmp_path,
        "(Worker_DP6_EP6 pid=9774) ERROR 08-01 12:42:13 [mooncake_connector.py:1899] pulling kv_caches for "
        "['973ca62f1bc3666d'] failed: Timeout waiting for P side ready.\n"
        "(Worker_DP0_EP0 pid=9778) ERROR 08-01 12:42:13 [mooncake_connector.py:1899] pulling kv_caches for "
        "['94a7d5ac08490bb5'] failed: Timeout waiting for P side ready.\n",
    )
    # WHEN judged THEN the server was serving, and no process failure is claimed from a request's
    assert report["phase"] == "serving"
    assert report["verdict"] not in {"crashed", "aborted", "timeout"}
