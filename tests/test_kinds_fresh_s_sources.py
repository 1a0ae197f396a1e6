"""Lines the fresh-s batch left unread or misplaced, each written from the format its system prints in the released
source the pack's rule cites: SGLang 0.1.x's per-rank load and memory-pool lines."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def test_sglang_01_pool_sizing_line_places_kv_cache_after_the_weights(tmp_path: Path) -> None:
    # GIVEN sglang 0.1.x's router/model_runner.py `Rank {tp_rank}: load weight begin.` / `... end.` on two ranks,
    # then model_rpc.py's `Rank {tp_rank}: max_total_num_token=..., max_prefill_num_token=..., context_len=..., `
    # (logged once init_memory_pool sized the pool), and nothing after it
    text = (
        "Rank 0: load weight begin.\n"
        "Rank 1: load weight begin.\n"
        "Rank 1: load weight end.\n"
        "Rank 0: load weight end.\n"
        "Rank 1: max_total_num_token=98304, max_prefill_num_token=16384, context_len=8192, \n"
        "Rank 0: max_total_num_token=98304, max_prefill_num_token=16384, context_len=8192, \n"
    )
    report = judge_text(tmp_path, text)
    # WHEN judged post-mortem THEN both ranks got past the weights to the pool, the later pool line the one quoted
    assert report["phase"] == "kv_cache"
    assert report["verdict"] == "stalled"
    assert root_text(report) == "Rank 0: max_total_num_token=98304, max_prefill_num_token=16384, context_len=8192, "


def test_sglang_01_load_begin_alone_is_weight_load(tmp_path: Path) -> None:
    # GIVEN only 0.1.x's `Rank 0: load weight begin.`
    report = judge_text(tmp_path, "Rank 0: load weight begin.\n")
    # WHEN judged THEN the rank was loading its weights
    assert report["phase"] == "weight_load"


def test_the_warmup_threads_own_model_info_poll_logged_by_its_client_is_warmup(tmp_path: Path) -> None:
    # GIVEN Uvicorn up, then urllib3's DEBUG line for the warmup thread's `GET /get_model_info` (sglang
    # http_server.py _execute_server_warmup) through a proxy, answered 403 (`'%s://%s:%s "%s %s %s" %s %s'`)
    text = (
        "[2025-08-13 11:01:02] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        "[2025-08-13 11:01:03] Starting new HTTP connection (1): 10.1.2.3:3128\n"
        '[2025-08-13 11:01:03] http://10.1.2.3:3128 "GET http://0.0.0.0:30000/get_model_info HTTP/1.1" 403 3582\n'
    )
    report = judge_text(tmp_path, text)
    # WHEN judged post-mortem THEN the server was past its HTTP start, polling in its warmup, no failure claimed
    assert report["phase"] == "warmup"
    assert report["verdict"] in {"stalled", "progressing"}


def test_a_client_log_of_another_endpoint_is_no_warmup(tmp_path: Path) -> None:
    # GIVEN Uvicorn up, then urllib3's line for a GET of /health (no warmup request of SGLang's)
    text = (
        "[2025-08-13 11:01:02] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        '[2025-08-13 11:01:03] http://127.0.0.1:30000 "GET /health HTTP/1.1" 200 2\n'
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN the HTTP start is the step reached
    assert report["phase"] == "http_start"


def test_a_dump_inside_ddps_parameter_broadcast_is_in_dist_init(tmp_path: Path) -> None:
    # GIVEN faulthandler's dump of a fatal error (`Fatal Python error: Aborted`, `Current thread 0x... (most recent
    # call first):`, `  File "...", line N in func`) whose innermost frames are torch.distributed.utils's
    # `_sync_params_and_buffers` <- `_sync_module_states` <- DistributedDataParallel.__init__
    site = "/opt/conda/lib/python3.11/site-packages"
    text = (
        "Fatal Python error: Aborted\n"
        "\n"
        "Current thread 0x00007f0c2a1b4740 (most recent call first):\n"
        f'  File "{site}/torch/distributed/utils.py", line 322 in _sync_params_and_buffers\n'
        f'  File "{site}/torch/distributed/utils.py", line 311 in _sync_module_states\n'
        f'  File "{site}/torch/nn/parallel/distributed.py", line 837 in __init__\n'
        '  File "/work/train.py", line 40 in main\n'
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN the process died in DDP's init broadcast: the distributed setup
    assert report["phase"] == "dist_init"
    assert report["verdict"] == "aborted"


def test_a_traceback_through_ddps_shape_check_failed_in_dist_init(tmp_path: Path) -> None:
    # GIVEN a traceback whose frames go through DDP.__init__ into `_verify_param_shape_across_processes`
    site = "/opt/conda/lib/python3.11/site-packages"
    text = (
        "Traceback (most recent call last):\n"
        '  File "/work/train.py", line 40, in <module>\n'
        "    model = DDP(model, device_ids=[rank])\n"
        f'  File "{site}/torch/nn/parallel/distributed.py", line 825, in __init__\n'
        "    _verify_param_shape_across_processes(self.process_group, parameters)\n"
        f'  File "{site}/torch/distributed/utils.py", line 294, in _verify_param_shape_across_processes\n'
        "    return dist._verify_params_across_processes(process_group, tensors, logger)\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
        "unhandled system error\n"
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN it crashed in the distributed setup
    assert report["phase"] == "dist_init"
    assert report["verdict"] == "crashed"


def test_a_scheduler_exception_behind_a_rank_tag_without_its_time_is_the_cause(tmp_path: Path) -> None:
    # GIVEN SGLang's `[{time} TP0] Scheduler hit an exception: {traceback}` (scheduler.py run_scheduler_process) with
    # the time taken out by the person pasting it, then one frame cut mid-name and nothing after it
    text = (
        "[TP0] Scheduler hit an exception:\n"
        '  File "sglang/srt/managers/scheduler.py", line 1431, in event_loop_overla\n'
    )
    report = judge_text(tmp_path, text)
    # WHEN judged THEN TP0's scheduler crashed, its own header the line quoted (no exception line in the paste)
    assert report["verdict"] == "crashed"
    assert root_text(report) == "[TP0] Scheduler hit an exception:"
    assert report["root_cause"]["rank"] == "TP0"


def test_a_bracketed_word_that_is_no_rank_tag_is_no_sglang_prefix(tmp_path: Path) -> None:
    # GIVEN the same header behind `[GPU3] `, a tag SGLang never prints
    report = judge_text(tmp_path, "[GPU3] Scheduler hit an exception:\n")
    # WHEN judged THEN no SGLang scheduler's failure is read from it
    assert report["verdict"] != "crashed"
