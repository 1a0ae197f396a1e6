"""The pure dump parsers: faulthandler (plain, prefixed, interleaved, torn), py-spy text and JSON,
SGLang's in-log py-spy blocks, pystack, and logphase's own JSON."""

from __future__ import annotations

import json

from logphase.stacks.dumps import parse_dumps_in_text, rank_from_file_name, role_and_rank_from_title
from logphase.stacks.dumps_json import parse_dump_text, parse_json_text

from .conftest import REALWORLD, STACKS_FIXTURES


def main_frames(snapshot) -> list[str]:  # type: ignore[no-untyped-def]
    thread = snapshot.main_thread()
    return [f.key for f in thread.frames] if thread else []


def test_dump_file_names_name_ranks() -> None:
    # GIVEN dump files saved per rank WHEN their names are read THEN one rank number is the rank
    assert rank_from_file_name("pyspy-rank1.json") == "rank 1"
    assert rank_from_file_name("rank_12.txt") == "rank 12"
    assert rank_from_file_name("dump-RANK-3-native.txt") == "rank 3"
    assert rank_from_file_name("rank7-of-rank7.txt") == "rank 7"
    # ... and names that give no rank, a local or node rank, or two ranks, give none
    assert rank_from_file_name("pyspy-627.json") is None
    assert rank_from_file_name("frank1.txt") is None
    assert rank_from_file_name("local_rank1.txt") is None
    assert rank_from_file_name("node-rank0.json") is None
    assert rank_from_file_name("rank0-to-rank1.txt") is None


def test_titles_name_roles_and_ranks() -> None:
    assert role_and_rank_from_title("sglang::scheduler_TP3") == ("scheduler", "TP3")
    assert role_and_rank_from_title("sglang::scheduler_DP1_TP3_EP3") == ("scheduler", "DP1 TP3 EP3")
    assert role_and_rank_from_title("sglang::scheduler_PP1_TP0   ") == ("scheduler", "PP1 TP0")
    assert role_and_rank_from_title("sglang::scheduler_None") == ("scheduler", None)
    assert role_and_rank_from_title("sglang::detokenizer") == ("detokenizer", None)
    assert role_and_rank_from_title("sglang::data_parallel_controller") == ("dp_controller", None)
    assert role_and_rank_from_title("VLLM::Worker_TP1") == ("worker", "TP1")
    assert role_and_rank_from_title("VLLM::Worker_PP0_TP1") == ("worker", "PP0 TP1")
    assert role_and_rank_from_title("VLLM::EngineCore_DP0") == ("engine_core", None)
    assert role_and_rank_from_title("python3 -m sglang.launch_server --tp 4") == ("main", None)
    assert role_and_rank_from_title("/usr/bin/python3 /usr/bin/torchrun --nproc-per-node 8 t.py") == ("launcher", None)
    assert role_and_rank_from_title("python -c from multiprocessing.resource_tracker import main;main(5)") == (
        "resource_tracker",
        None,
    )


def test_faulthandler_prefixed_and_interleaved_by_torchrun() -> None:
    text = (STACKS_FIXTURES / "faulthandler-torchrun-interleaved.log").read_text()
    snaps = parse_dumps_in_text(text.splitlines())
    assert sorted(s.rank or "" for s in snaps) == ["local_rank 0", "local_rank 1", "local_rank 2", "local_rank 3"]
    for snap in snaps:
        assert len(snap.threads) == 2  # the tqdm monitor and the main thread
        main = main_frames(snap)
        assert main[-1] == "<module> (/app/train.py)"
        expected = (
            "load_file (safetensors/torch.py)"
            if snap.rank == "local_rank 2"
            else ("all_reduce (torch/distributed/distributed_c10d.py)")
        )
        assert main[0] == expected


def test_faulthandler_fatal_dumps_with_torn_lines() -> None:
    snaps = parse_dump_text((STACKS_FIXTURES / "faulthandler-fatal-torn.log").read_text())
    assert [s.fatal for s in snaps] == ["Fatal Python error: Aborted", "Fatal Python error: Segmentation fault"]
    first_tqdm = next(t for t in snaps[0].threads if not t.main)
    # the torn line still yields nothing broken: every frame is whole
    assert all(f.line for f in first_tqdm.frames)
    assert main_frames(snaps[0])[0] == "all_reduce (torch/distributed/distributed_c10d.py)"
    assert main_frames(snaps[1])[0] == "load_file (safetensors/torch.py)"


def test_torn_line_with_two_whole_frames_gives_both() -> None:
    lines = [
        "Fatal Python error: Aborted",
        "",
        "Current thread 0x00007f00 (most recent call first):",
        '  File "/a/x.py", line 3 in inner  File "/a/x.py", line 9 in outer',
        '  File "/a/x.py", line 12 in <module>',
    ]
    (snap,) = parse_dumps_in_text(lines)
    assert main_frames(snap) == ["inner (/a/x.py)", "outer (/a/x.py)", "<module> (/a/x.py)"]


def test_sglang_pyspy_blocks_inside_a_log() -> None:
    snaps = parse_dump_text((STACKS_FIXTURES / "sglang-watchdog-pyspy-tp4.log").read_text())
    assert [(s.pid, s.rank, s.role) for s in snaps] == [
        (300, "TP0", "scheduler"),
        (301, "TP1", "scheduler"),
        (302, "TP2", "scheduler"),
        (303, "TP3", "scheduler"),
        (999, "TP1", None),
    ]
    assert snaps[4].error == "Permission denied (os error 13)"
    assert [t.name for t in snaps[0].threads] == ["MainThread", "Thread-10 (watchdog_thread)"]
    assert main_frames(snaps[3])[0] == "load_file (safetensors/torch.py)"


def test_pystack_is_reversed_to_innermost_first() -> None:
    (snap,) = parse_dump_text((STACKS_FIXTURES / "pystack-remote.txt").read_text())
    assert snap.source == "pystack"
    assert [t.name for t in snap.threads] == ["MainThread", "Thread-1"]
    assert main_frames(snap)[0] == "all_reduce (torch/distributed/distributed_c10d.py)"
    assert main_frames(snap)[-1] == "<module> (/app/train.py)"


def test_pyspy_json_concatenated_arrays() -> None:
    snaps = parse_json_text((STACKS_FIXTURES / "pyspy-subprocesses-idle.json").read_text())
    assert [(s.pid, s.rank) for s in snaps] == [(500, "TP0"), (501, "TP1"), (502, "TP2"), (503, "TP3")]
    assert main_frames(snaps[1])[:2] == [
        "broadcast (torch/distributed/distributed_c10d.py)",
        "broadcast_pyobj (utils/common.py)",
    ]


def test_native_address_frames_are_dropped_and_orphans_kept() -> None:
    snaps = parse_dump_text((REALWORLD / "064_sglang-pp-watchdog-pyspy-dump.txt").read_text())
    orphan, ranked = snaps
    assert orphan.pid is None and orphan.main_thread() is None
    assert [t.name for t in orphan.threads] == [None, "Thread-2 (_watchdog_thread)"]
    assert (ranked.pid, ranked.rank, ranked.title) == (88693, "PP2 TP1", "sglang::scheduler_PP2_TP1")
    assert main_frames(ranked) == [
        "pthread_cond_timedwait (libc.so.6)",
        "gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)",
        "c10d::ProcessGroupGloo::RecvWork::wait (libtorch_cpu.so)",
    ]


def test_unrelated_log_lines_are_ignored() -> None:
    lines = ["[2025-01-01 10:00:00 TP0] Load weight begin. avail mem=21.63 GB", "INFO:     Uvicorn running on x", ""]
    assert parse_dumps_in_text(lines) == []


def test_logphase_json_reads_back() -> None:
    document = {
        "schema": "logphase.stacks/1",
        "processes": [
            {"pid": 7, "ppid": 1, "rank": "TP0", "role": "scheduler", "title": "t", "error": None, "moving": None}
        ],
        "groups": [
            {
                "ranks": ["TP0"],
                "pids": [7],
                "state": "idle",
                "frames": ["recv_pyobj (zmq/sugar/socket.py:80)"],
                "moving": None,
            }
        ],
    }
    (snap,) = parse_json_text(json.dumps(document))
    assert (snap.pid, snap.rank) == (7, "TP0")
    assert main_frames(snap) == ["recv_pyobj (zmq/sugar/socket.py)"]
