"""The module fallback (issue 25, item 3) beyond vLLM: torch's c10 / glog prefixes (`[I ProcessGroupNCCL.cpp:842] `,
`I1028 12:13:38.405081 632355 ProcessGroupNCCL.cpp:843] `, torch ≥2.4's python loggers `W0219 12:09:28.313000 140145
torch/distributed/run.py:757] `), Ray's driver and Serve prefixes (`2024-01-19 15:51:20,671\tINFO scripts.py:451 -- `,
`INFO 2024-09-19 08:23:42,508 controller 528 deployment_state.py:401 - `) and LMDeploy's (`2025-01-31 17:30:52,472 -
lmdeploy - INFO - api.py:81 - `). Each line below is written from those formats with a message the released source
logs at that step (patterns/torch.toml, ray.toml, lmdeploy.toml `[[module]]`), and no rule reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.logs.matcher import explain
from logphase.packs import load_packs
from tests.conftest import judge_text
from tests.equivalence import reports

PLACED = [
    # torch 1.x c10 logging: ncclCommWatchdog's first line, the thread ProcessGroupNCCL's constructor starts
    ("[I ProcessGroupNCCL.cpp:842] [Rank 0] NCCL watchdog thread started!", "dist_init", "ProcessGroupNCCL.cpp"),
    # c10d's SocketListenOp as the TCPStore server comes up at rendezvous
    ("[I socket.cpp:566] [c10d] The server socket has started to listen on [::]:29500.", "dist_init", "socket.cpp"),
    # torchrun's config (torch/distributed/run.py determine_local_world_size), glog-stamped from 2.4
    ("I0219 12:09:28.313000 140145 torch/distributed/run.py:675] Using nproc_per_node=8.", "launch", "run.py"),
    # the c10d rendezvous handler joining its round (dynamic_rendezvous.py next_rendezvous)
    (
        "I0101 00:00:01.000000 123 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1182] The node"
        " 'host_1_0' has joined round 0 of the rendezvous 'none' as rank 0 in a world of size 2.",
        "dist_init",
        "dynamic_rendezvous.py",
    ),
    # `serve run` (ray/serve/scripts.py)
    ("2024-01-19 15:51:20,671\tINFO scripts.py:494 -- Running import path: 'app:build'.", "launch", "scripts.py"),
    # Serve's controller starting a replica (deployment_state.py ActorReplicaWrapper.start)
    (
        "INFO 2024-09-19 08:23:42,508 controller 528 deployment_state.py:404 - Starting Replica(id='abc',"
        " deployment='D', app='default').",
        "launch",
        "deployment_state.py",
    ),
    # the `deepspeed` runner choosing the master address before it runs the launcher (launcher/runner.py main)
    (
        "[2025-12-28 05:01:35,972] [INFO] [runner.py:496:main] Using IP address of 10.0.0.11 for node worker-0",
        "launch",
        "runner.py",
    ),
    # DeepSpeed picking its accelerator at import (accelerator/real_accelerator.py get_accelerator)
    (
        "[2025-12-28 05:01:35,100] [WARNING] [real_accelerator.py:181:get_accelerator] Setting accelerator to CPU."
        " If you have GPU or other accelerator, we were unable to detect it.",
        "launch",
        "real_accelerator.py",
    ),
    # deepspeed.initialize's init_distributed on a process group the job made already (comm/comm.py)
    (
        "[2025-03-07 23:55:15,357] [INFO] [comm.py:677:init_distributed] Distributed backend already initialized",
        "dist_init",
        "comm.py",
    ),
    # ZeRO stage 1/2's optimizer built inside deepspeed.initialize (runtime/zero/stage_1_and_2.py __init__)
    (
        "[2025-03-07 23:55:16,883] [INFO] [stage_1_and_2.py:149:__init__] Reduce bucket size 500000000",
        "dist_init",
        "stage_1_and_2.py",
    ),
    # LMDeploy's pipeline choosing its engine (lmdeploy/api.py), get_logger's `%(filename)s:%(lineno)d`
    ("2025-01-31 17:30:52,472 - lmdeploy - INFO - api.py:81 - Using turbomind engine", "launch", "api.py"),
]

NOT_PLACED = [
    # the watchdog's end: any step's (ProcessGroupNCCL.cpp places only its set-up words)
    "[I ProcessGroupNCCL.cpp:850] [Rank 0] NCCL watchdog thread terminated normally",
    # ZeRO's overflow check during a training step (stage_1_and_2.py has_overflow_serial): no set-up words
    "[2025-03-07 23:58:16,883] [INFO] [stage_1_and_2.py:2422:has_overflow_serial] rank 0 detected overflow nan in"
    " tensor 0:3 shape torch.Size([4096])",
    # a collective's fallback warning (comm/comm.py allgather_fn): any step's
    "[2025-03-07 23:58:16,883] [WARNING] [comm.py:323:allgather_fn] unable to find"
    " torch.distributed.all_gather_into_tensor. will fall back to torch.distributed.all_gather which will result in"
    " suboptimal performance. please consider upgrading your pytorch installation.",
    # the rendezvous closed at the job's end (dynamic_rendezvous.py _close)
    "I0101 00:00:09.000000 123 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1303] The node 'host_1_0'"
    " has closed the rendezvous 'none'.",
    # `ray stop` (ray/scripts/scripts.py stop): the same file as `ray start`, another step
    "2024-01-19 15:59:20,671\tINFO scripts.py:1246 -- Stopped all 5 Ray processes.",
    # the Ray executor releasing its workers at the end (ray_executor.py release), not its process group's set-up
    "2025-03-19 17:00:00,000 - lmdeploy - DEBUG - ray_executor.py:303 - RayExecutor workers released.",
]


@pytest.mark.parametrize(("line", "phase", "module"), PLACED)
def test_a_line_no_rule_reads_is_placed_by_the_file_its_prefix_names(
    tmp_path: Path, line: str, phase: str, module: str
) -> None:
    # GIVEN a log whose only line, of a file a torch or Ray module entry maps, no rule reads
    assert not explain(line, load_packs(check_examples=False)).matches
    # WHEN judged post-mortem
    report = judge_text(tmp_path, line + "\n")
    # THEN the run stopped in the file's step, at low confidence, and the reason names the module
    assert (report["phase"], report["verdict"], report["confidence"]) == (phase, "stalled", "low")
    assert report["reason"].endswith(f"{phase} placed by its logger's module {module} (line 1), no rule read it")


@pytest.mark.parametrize("line", NOT_PLACED)
def test_a_line_of_another_step_of_a_mapped_file_places_nothing(tmp_path: Path, line: str) -> None:
    # GIVEN a log whose only line is of a mapped file, without the words of the file's start-up step
    assert not explain(line, load_packs(check_examples=False)).matches
    # WHEN judged post-mortem
    report = judge_text(tmp_path, line + "\n")
    # THEN nothing is placed: no phase, no verdict
    assert (report["phase"], report["verdict"]) == (None, "unknown")


def test_a_rule_read_line_of_the_same_step_after_a_placed_one_is_the_cause(tmp_path: Path) -> None:
    # GIVEN c10 built with glog: the watchdog's start (no rule reads it), then the options the constructor prints
    # (torch.dist_init.pg_options), the log cut there
    text = (
        "I1028 12:13:38.405081 632355 ProcessGroupNCCL.cpp:843] [Rank 0] NCCL watchdog thread started!\n"
        "I1028 12:13:38.405865 632324 ProcessGroupNCCL.cpp:666] [Rank 0] ProcessGroupNCCL initialized with following"
        " options:\n"
        "NCCL_ASYNC_ERROR_HANDLING: 1\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN it stalled in dist_init, and the cause is the options line a rule read, not the placed one
    assert (report["phase"], report["verdict"]) == ("dist_init", "stalled")
    assert report["root_cause"]["line"] == 2
    assert report["root_cause"]["rule"] == "torch.dist_init.pg_options"


def test_a_later_line_another_module_placed_in_the_same_step_is_the_cause(tmp_path: Path) -> None:
    # GIVEN deepspeed.initialize's lines (DeepSpeed's `[file:line:func]` prefix): init_distributed on the job's process
    # group (comm/comm.py), then ZeRO stage 2's optimizer set-up (stage_1_and_2.py), the log cut after it
    text = (
        "[2025-03-07 23:55:15,357] [INFO] [comm.py:677:init_distributed] Distributed backend already initialized\n"
        "[2025-03-07 23:55:16,883] [INFO] [stage_1_and_2.py:149:__init__] Reduce bucket size 500000000\n"
        "[2025-03-07 23:55:16,883] [INFO] [stage_1_and_2.py:150:__init__] Allgather bucket size 500000000\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN it stopped in dist_init, and the cause is the last line of the step (line 3), not the first one placed
    assert (report["phase"], report["verdict"]) == ("dist_init", "stalled")
    assert report["root_cause"]["line"] == 3


def test_the_fast_path_reads_a_c10_line_past_the_head_as_the_plain_path(tmp_path: Path) -> None:
    # GIVEN a long c10-prefixed log (past the head both paths read whole): socket.cpp connect lines no rule reads,
    # other files' notes, then one more socket.cpp line on the same template, then more notes
    lines = [
        f"[I socket.cpp:787] [c10d] The client socket has connected to [h]:29500 on [h]:{40000 + n}."
        for n in range(600)
    ]
    lines += [f"[W Utils.hpp:{n}] Warning: a periodic note {n} (function operator())" for n in range(800)]
    lines.append("[I socket.cpp:787] [c10d] The client socket has connected to [h]:29500 on [h]:50000.")
    lines += [f"[W Utils.hpp:{n}] Warning: a periodic note {n} (function operator())" for n in range(800)]
    log = tmp_path / "long.log"
    log.write_text("\n".join(lines) + "\n")
    packs = load_packs(check_examples=False)
    # WHEN read by the plain path and by the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and both end dist_init at the last socket.cpp line
    assert fast == plain
    assert '"end_line": 1401' in plain
