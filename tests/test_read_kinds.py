"""Kinds of lines of the newest real batches that went unread (issue 25, fresh-f and fresh-g): each written from the
format the system prints in its released source (the pack's rule cites it), read line by line or judged end to end."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from logphase.logs.envelope import sniff
from logphase.logs.matcher import explain
from logphase.logs.reader import LogSource, packs_reading, read_lines
from logphase.packs.loading import load_packs
from tests.conftest import judge_text, root_text


def _rules(line: str) -> list[str]:
    return [rule.id for rule, _ in explain(line, load_packs(check_examples=False)).matches]


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "server.log")


# --- vLLM: the plugin loading every process does first --------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # vllm/plugins/__init__.py 0.11.0 / 0.33.0: `Available plugins for group %s:` and the closing advice
        "INFO 10-02 09:00:00 [__init__.py:36] Available plugins for group vllm.general_plugins:",
        "INFO 10-02 09:00:00 [__init__.py:41] All plugins in this group will be loaded. "
        "Set `VLLM_PLUGINS` to control which plugins to load.",
        # 0.8.5's wording
        "INFO 04-20 09:00:00 __init__.py:34] all available plugins for group vllm.platform_plugins will be loaded.",
        # vllm/platforms/__init__.py `Platform plugin %s is activated`, under a worker's process tag
        "(EngineCore_DP0 pid=77) INFO 10-02 09:00:01 [__init__.py:207] Platform plugin tpu_inference is activated",
    ],
)
def test_vllm_plugin_loading_is_read_as_launch(line: str) -> None:
    # GIVEN a plugin-loading line vLLM prints as a process starts
    # WHEN explained THEN the plugin rule reads it
    assert _rules(line) == ["vllm.launch.plugins"]


def test_a_vllm_start_that_never_got_past_its_plugins_stalled_at_launch(tmp_path: Path) -> None:
    # GIVEN a vLLM start whose processes only loaded their platform plugins, then nothing (an excerpt's end)
    report = _judge(
        tmp_path,
        "INFO 10-02 09:00:00 [__init__.py:36] Available plugins for group vllm.platform_plugins:\n"
        "INFO 10-02 09:00:00 [__init__.py:38] - tpu -> tpu_inference:register\n"
        "INFO 10-02 09:00:00 [__init__.py:41] All plugins in this group will be loaded. "
        "Set `VLLM_PLUGINS` to control which plugins to load.\n"
        "INFO 10-02 09:00:01 [__init__.py:207] Platform plugin tpu is activated\n",
    )
    # THEN vLLM, stalled at launch
    assert (report["system"], report["verdict"], report["phase"]) == ("vllm", "stalled", "launch")


def test_a_plugin_that_failed_to_load_is_not_a_plugin_line() -> None:
    # GIVEN vLLM's `Failed to load plugin %s` (logger.exception: its traceback follows)
    # WHEN explained THEN the plugin rule does not read it as a step of the start
    assert "vllm.launch.plugins" not in _rules("ERROR 10-02 09:00:00 [__init__.py:55] Failed to load plugin tpu")


# --- SGLang PD: a prefill server giving up a request's bootstrap --------------------------------------------


def test_a_prefill_bootstrap_timeout_is_a_serving_request_failure(tmp_path: Path) -> None:
    # GIVEN an SGLang PD prefill server's scheduler giving up a request whose decode peer never sent its KV indices
    # (prefill.py `Prefill bootstrap failed for request rank=…` with mooncake's `timed out after …s in
    # KVPoll.Bootstrapping`): the request is aborted with a 500 and the loop goes on
    report = _judge(
        tmp_path,
        "[2025-09-10 08:00:00 TP1] Prefill bootstrap failed for request rank=1 req.rid='9f2c' "
        "req.bootstrap_room=77 with exception KVTransferError(bootstrap_room=77): "
        "Request 77 timed out after 300.0s in KVPoll.Bootstrapping\n",
    )
    # THEN the server is serving: a request failed, the server did not
    assert (report["system"], report["phase"]) == ("sglang", "serving")
    assert report["verdict"] not in ("crashed", "timeout")


# --- Ray: the CLI's levels, Serve's 2.3 / 2.9 wordings, a raylet's cut death notice -------------------------


def test_a_serve_run_that_deployed_its_app_is_ready(tmp_path: Path) -> None:
    # GIVEN `serve run` (Ray 2.9): the driver's lines, the controller deploying, then cli_logger.success's `SUCC`
    report = _judge(
        tmp_path,
        "2024-02-01 10:00:00,100\tINFO scripts.py:442 -- Running import path: 'app:app'.\n"
        "2024-02-01 10:00:02,200\tINFO worker.py:1724 -- Started a local Ray instance.\n"
        "(ServeController pid=501) INFO 2024-02-01 10:00:04,000 controller 501 deployment_state.py:1546 - "
        "Deploying new version of deployment LLM in application 'default'. "
        "Setting initial target number of replicas to 1.\n"
        "(ServeController pid=501) INFO 2024-02-01 10:00:04,100 controller 501 deployment_state.py:1830 - "
        "Adding 1 replica to deployment LLM in application 'default'.\n"
        "2024-02-01 10:00:30,500\tSUCC scripts.py:483 -- Deployed Serve app successfully.\n",
    )
    # THEN ready, the success line the last word
    assert (report["verdict"], report["phase"]) == ("ready", "ready")


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        # ray 2.3.0 serve/_private/deployment_state.py:1334, 630 and 622 (no space before `times` in 2.3.0)
        (
            "INFO 2023-03-10 09:14:57,327 controller 979 deployment_state.py:1334 - Adding 2 replicas to deployment "
            "'Model'.",
            "ray.serve.deploying",
        ),
        (
            "INFO 2023-03-10 09:14:57,180 controller 979 deployment_state.py:630 - Actor for replica Model#abCdEf "
            "crashed, marking it unhealthy immediately.",
            "ray.serve.replica_unhealthy",
        ),
        (
            "WARNING 2024-02-01 10:00:00,100 controller 979 deployment_state.py:826 - Replica Model#abCdEf failed the "
            "health check 3 times in a row, marking it unhealthy.",
            "ray.serve.replica_unhealthy",
        ),
        # serve/_private/replica.py 2.9.1 / 2.40.0, the replica's own log file
        (
            "INFO 2024-02-01 10:00:05,000 default_LLM ujj4diu5 replica.py:172 - Started initializing replica.",
            "ray.serve.replica_initializing",
        ),
    ],
)
def test_ray_serve_lines_of_earlier_releases_are_read(line: str, rule: str) -> None:
    # GIVEN a Serve controller's or replica's line as Ray 2.3 or 2.9 words it
    # WHEN explained THEN the rule of its kind reads it
    assert _rules(line) == [rule]


def test_a_replica_whose_actor_crashed_is_a_crash(tmp_path: Path) -> None:
    # GIVEN a Ray 2.3 controller: the replica's actor crashed, the health check stops it, a new one is added
    report = _judge(
        tmp_path,
        "INFO 2023-03-10 09:14:57,180 controller 979 deployment_state.py:630 - Actor for replica Model#abCdEf "
        "crashed, marking it unhealthy immediately.\n"
        "WARNING 2023-03-10 09:14:57,187 controller 979 deployment_state.py:1548 - Replica Model#abCdEf of "
        "deployment Model failed health check, stopping it.\n"
        "INFO 2023-03-10 09:14:57,327 controller 979 deployment_state.py:1334 - Adding 1 replica to deployment "
        "'Model'.\n",
    )
    # THEN crashed, the actor's crash the cause
    assert report["verdict"] == "crashed"
    assert "Actor for replica Model#abCdEf crashed" in root_text(report)


def test_a_replica_whose_health_check_got_no_answer_timed_out(tmp_path: Path) -> None:
    # GIVEN a Ray 2.40 controller: a deployed replica's health check gets no answer within its 10 s timeout
    # (deployment_state.py), the replica's engine still printing its stats after it
    report = _judge(
        tmp_path,
        "(ServeController pid=501) INFO 2025-02-01 10:00:04,100 controller 501 -- Deploying new version of "
        "Deployment(name='LLMServer', app='default') (initial target replicas: 1).\n"
        "(ServeController pid=501) WARNING 2025-02-01 10:20:04,100 controller 501 -- Didn't receive health check "
        "response for replica Replica(id='ab12cd34', deployment='LLMServer', app='default') after 10.0s, marking "
        "it unhealthy.\n",
    )
    # THEN timeout, the unanswered check the cause
    assert report["verdict"] == "timeout"
    assert "Didn't receive health check response for replica Replica(id='ab12cd34'" in root_text(report)


def test_a_health_check_timeout_whose_serve_head_the_paste_cut_is_still_read() -> None:
    # GIVEN the same message with the paste's cut through the Serve head (only the component id and `-- ` left)
    line = (
        "501 -- Didn't receive health check response for replica Replica(id='ab12cd34', deployment='LLMServer', "
        "app='default') after 30.0s, marking it unhealthy."
    )
    # WHEN explained THEN the health-check timeout reads it
    assert _rules(line) == ["ray.serve.health_check_timeout"]


def test_a_raylet_death_notice_cut_inside_its_sentence_is_still_the_crash(tmp_path: Path) -> None:
    # GIVEN a driver's output ending in the raylet's pushed notice (node_manager.cc), cut by the paste mid-sentence
    report = _judge(
        tmp_path,
        "(TaskRunner pid=3190) step 12 done\n(raylet) A worker died or was killed while executing a task by an unexp",
    )
    # THEN crashed, the notice the cause
    assert report["verdict"] == "crashed"
    assert root_text(report) == "(raylet) A worker died or was killed while executing a task by an unexp"


# --- a test harness's tee of its child's streams -------------------------------------------------------------


def test_accelerate_test_stream_labels_are_an_envelope() -> None:
    # GIVEN `accelerate test` output: each line of the child printed as `print("stderr:", line)`
    data = (
        b"stderr: Traceback (most recent call last):\n"
        b'stderr:   File "/opt/venv/bin/torchrun", line 8, in <module>\n'
        b"stderr:     sys.exit(main())\n"
        b"stderr: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        b"stdout: **Test process execution**\n"
    )
    # WHEN sniffed and read
    assert [envelope.name for envelope in sniff(data.decode().splitlines()).layers] == ["a test harness's stream tee"]
    source = LogSource(name="pasted", open_stream=lambda: io.BytesIO(data))
    # THEN the labels are gone and the child's lines keep their own indentation
    assert [line.text for line in read_lines(source)][:3] == [
        "Traceback (most recent call last):",
        '  File "/opt/venv/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
    ]


# --- torch: a c10 backtrace's frames pasted without their header --------------------------------------------

_FRAMES = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f6aa9ca0446 in "
    "/opt/venv/lib/python3.10/site-packages/torch/lib/libc10.so)\n"
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
    "std::ratio<1l, 1000l> > >) + 0x282 (0x7f6aaafa5672 in /opt/venv/lib/python3.10/site-packages/torch/lib/"
    "libtorch_cuda.so)\n"
    "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f6aaafacab3 in "
    "/opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)\n"
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f6aaafae51d in "
    "/opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)\n"
)


def test_watchdog_frames_alone_are_a_collective_timeout(tmp_path: Path) -> None:
    # GIVEN only the frames of a c10 backtrace built in WorkNCCL::checkTimeout (the header and what() cut away)
    report = _judge(tmp_path, _FRAMES)
    # THEN a timeout, its checkTimeout frame the cause
    assert report["verdict"] == "timeout"
    assert root_text(report).startswith("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(")


def test_under_its_header_the_watchdog_frame_leaves_the_cause_to_the_timeout_line(tmp_path: Path) -> None:
    # GIVEN std::terminate's report of the watchdog's timeout, then the backtrace's header and its frames
    report = _judge(
        tmp_path,
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with exception: "
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600017 milliseconds before timing out.\n"
        "Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 "
        "(most recent call first):\n" + _FRAMES,
    )
    # THEN a timeout, and the cause is the line that says which collective timed out, not a frame
    assert report["verdict"] == "timeout"
    assert "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3" in root_text(report)


def test_the_watchdog_threads_rethrow_after_the_timeout_frames_leaves_them_the_cause(tmp_path: Path) -> None:
    # GIVEN the checkTimeout backtrace's frames (its header and what() cut away), then the backtrace c10 appends for
    # ncclCommWatchdog's rethrow of what it caught (`Exception raised from ncclCommWatchdog at …`) and its first frame
    report = _judge(
        tmp_path,
        _FRAMES + "\n"
        "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1521 "
        "(most recent call first):\n"
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f6aa9ca0446 in "
        "/opt/venv/lib/python3.10/site-packages/torch/lib/libc10.so)\n",
    )
    # THEN a timeout: the rethrow is what the timeout set off, and the checkTimeout frame stays the cause
    assert report["verdict"] == "timeout"
    assert root_text(report).startswith("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(")


# --- the message of a log no line places -------------------------------------------------------------------


def test_a_log_of_notes_alone_is_not_said_to_match_nothing(tmp_path: Path) -> None:
    # GIVEN torchrun's agent noting its signal handler (torch/distributed/elastic/multiprocessing/api.py, a
    # diagnostic line of no step) and nothing else
    report = _judge(
        tmp_path,
        "I1201 10:00:00.000000 1234 torch/distributed/elastic/multiprocessing/api.py:547] "
        "Registered signal handler for SIGTERM\n",
    )
    # THEN unknown, and the reason says the line read places nothing, not that no line matched
    assert report["verdict"] == "unknown"
    assert report["reason"] == (
        "no line read says a step of the start, a failure or an end (the lines matched are notes)"
    )


def test_a_log_of_a_program_own_lines_still_says_no_line_matched(tmp_path: Path) -> None:
    # GIVEN a training script's own prints, no system's line among them
    report = _judge(tmp_path, "epoch 1 loss 0.52\nepoch 2 loss 0.48\n")
    # THEN unknown: no line matched any pattern
    assert (report["verdict"], report["reason"]) == ("unknown", "no line matched any pattern")


# --- a loose envelope on an excerpt of a line or two -----------------------------------------------------------


def _reads(line: str) -> int:
    return packs_reading(load_packs(check_examples=False), line)


def test_two_lines_quoted_in_a_review_are_unwrapped(tmp_path: Path) -> None:
    # GIVEN nccl-tests' two closing lines (common.cu `# Out of bounds values : %d %s`, `# Avg bus bandwidth    : %g`)
    # quoted in a review comment with markdown's `> `
    text = "> # Out of bounds values : 0 OK\n> # Avg bus bandwidth    : 92.3405 \n"
    # WHEN sniffed with the packs THEN the quote is an envelope, though two lines are too few for its loose shape
    assert [e.name for e in sniff(text.splitlines(), reads=_reads).layers] == ["markdown quote"]
    # AND the benchmark is read as finished, as it is unquoted
    assert judge_text(tmp_path, text)["verdict"] == "finished"


def test_a_line_or_two_that_only_look_wrapped_are_left_alone() -> None:
    # GIVEN a script's two prints that start like srun's label, nothing any pack reads with or without it
    head = ["0: epoch 1 loss 0.52", "1: epoch 2 loss 0.48"]
    # WHEN sniffed with the packs THEN no envelope: the packs read nothing more without it
    assert sniff(head, reads=_reads).layers == ()


def test_a_cat_n_listing_is_read_without_its_line_numbers(tmp_path: Path) -> None:
    # GIVEN an SGLang log shown through coreutils' `cat -n` (each line numbered `%6d` and a tab)
    lines = [
        "[2025-03-08 12:29:13 TP0] Load weight begin. avail mem=21.63 GB",
        "[2025-03-08 12:29:20 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=6.53 GB",
        "[2025-03-08 12:29:21 TP0] Memory pool end. avail mem=4.20 GB",
    ]
    numbered = [f"{number:6d}\t{line}" for number, line in enumerate(lines, 1)]
    # WHEN sniffed with the packs THEN the numbers are a column taken off
    assert [e.name for e in sniff(numbered, reads=_reads).layers] == ["a line-number column"]
    # AND the log reads as it does unnumbered
    plain = judge_text(tmp_path, "\n".join(lines) + "\n", "plain.log")
    listed = judge_text(tmp_path, "\n".join(numbered) + "\n", "listed.log")
    assert (listed["verdict"], listed["phase"]) == (plain["verdict"], plain["phase"]) == ("stalled", "kv_cache")


def test_a_log_viewer_gutter_before_a_time_column_is_peeled_with_it(tmp_path: Path) -> None:
    # GIVEN a Ray 2.3 Serve controller's lines as a log viewer shows them: its line numbers, newest first, then its
    # own RFC 3339 time column, then Serve's line (deployment_state.py:630's crash notice)
    text = (
        " 12 2023-03-10T11:14:57-06:00 INFO 2023-03-10 09:14:57,327 controller 979 deployment_state.py:1334 - "
        "Adding 1 replica to deployment 'Model'.\n"
        " 11 2023-03-10T11:14:57-06:00 INFO 2023-03-10 09:14:57,180 controller 979 deployment_state.py:630 - "
        "Actor for replica Model#abCdEf crashed, marking it unhealthy immediately.\n"
        " 10 2023-03-10T11:14:56-06:00 INFO 2023-03-10 09:14:56,010 controller 979 deployment_state.py:1334 - "
        "Adding 1 replica to deployment 'Model'.\n"
    )
    # WHEN judged THEN the crash is read through both columns
    report = _judge(tmp_path, text)
    assert report["verdict"] == "crashed"
    assert root_text(report).endswith("- Actor for replica Model#abCdEf crashed, marking it unhealthy immediately.")


# --- a job's step bar: full once per step -------------------------------------------------------------------


def test_a_bar_full_again_after_other_lines_is_a_bar_per_step_not_the_jobs_end(tmp_path: Path) -> None:
    # GIVEN a loop that draws a new tqdm bar each step (the same description and total), each full, with the
    # step's own lines between: tqdm draws a closed bar no more, so the second full bar is a new one
    report = _judge(
        tmp_path,
        "step 1 starting\n"
        "Training rollouts: 100%|██████████| 64/64 [00:41<00:00,  1.55it/s]\n"
        "step 1 done, reward 0.31\n"
        "step 2 starting\n"
        "Training rollouts: 100%|██████████| 64/64 [00:44<00:00,  1.45it/s]\n"
        "step 2 done, reward 0.33\n",
    )
    # THEN not finished: the newest fill ended a step, and nothing says the job ended
    assert report["verdict"] in ("stalled", "progressing")
    assert report["phase"] == "serving"


def test_a_bar_drawn_full_twice_in_a_row_is_one_bar_that_finished(tmp_path: Path) -> None:
    # GIVEN one training bar: its ticks, its last update full and tqdm's close() drawing the full bar once more
    report = _judge(
        tmp_path,
        "Training:  50%|█████     | 50/100 [00:20<00:20,  2.50it/s]\n"
        "Training: 100%|██████████| 100/100 [00:40<00:00,  2.50it/s]\n"
        "Training: 100%|██████████| 100/100 [00:40<00:00,  2.50it/s]\n",
    )
    # THEN finished: the bar reached its total, and nothing came between its two full draws
    assert report["verdict"] == "finished"


# --- SGLang 0.5: the local snapshot found, a step of the weight load ---------------------------------------------


@pytest.mark.parametrize(
    "snapshot",
    [
        "Found local HF snapshot for org/Model-8B at /data/hf/hub/models--org--Model-8B/snapshots/0123abcd; "
        "skipping download.",
        "Found local HF snapshot for org/Model-8B at /data/hf/hub/mod",
    ],
)
def test_the_local_snapshot_found_after_the_load_began_is_where_a_stall_stopped(tmp_path: Path, snapshot: str) -> None:
    # GIVEN SGLang 0.5's load: `Load weight begin`, then the snapshot it found (whole, or cut inside its path)
    report = _judge(
        tmp_path,
        f"[2026-03-01 10:00:00 TP0] Load weight begin. avail mem=70.10 GB\n[2026-03-01 10:00:01 TP0] {snapshot}\n",
    )
    # THEN stalled in weight_load, the snapshot line the furthest step and so the cause
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")
    assert root_text(report) == f"[2026-03-01 10:00:01 TP0] {snapshot}"
