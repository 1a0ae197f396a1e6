"""Merging (prefix tree, classes, rank ranges), classification and the headline (pure)."""

from __future__ import annotations

from logphase.judging.stacks import ALL_IDLE
from logphase.judging.stalls import classify, summarize
from logphase.stacks.dumps import parse_frame_text
from logphase.stacks.dumps_json import parse_dump_text
from logphase.stacks.model import Frame, ProcessSnapshot, ThreadStack

from .conftest import REALWORLD, STACKS_FIXTURES


def snap(
    pid: int, rank: str | None, *frames: str, moving: bool | None = None, role: str = "scheduler"
) -> ProcessSnapshot:
    parsed = tuple(f for f in (parse_frame_text(text) for text in frames) if f is not None)
    thread = ThreadStack(thread_id=str(pid), name="MainThread", frames=parsed, main=True)
    return ProcessSnapshot(pid=pid, rank=rank, role=role, threads=(thread,), moving=moving)


CAPTURE = (
    "all_reduce (torch/distributed/distributed_c10d.py:2501)",
    "capture (cuda_graph_runner.py:330)",
    "init_cuda_graphs (model_runner.py:1200)",
    "run_scheduler_process (scheduler.py:2500)",
)
LOADING = (
    "load_weights (models/llama.py:500)",
    "load_model (model_runner.py:700)",
    "run_scheduler_process (scheduler.py:2500)",
)
IDLE = (
    "recv_requests (scheduler.py:900)",
    "event_loop_normal (scheduler.py:700)",
    "run_scheduler_process (scheduler.py:2500)",
)


def test_classification_prefers_the_wait_and_names_its_phase(signatures) -> None:  # type: ignore[no-untyped-def]
    frames = [parse_frame_text(t) for t in CAPTURE]
    cls = classify([f for f in frames if f], signatures)
    assert cls.state == "collective_wait"
    assert cls.frame == Frame("all_reduce", "torch/distributed/distributed_c10d.py", 2501)
    assert cls.context is not None and cls.context.function == "capture"
    assert classify([Frame("Popen._wait", "subprocess.py", 3)], signatures).state == "subprocess_wait"
    assert classify([Frame("mystery", "x.py", 1)], signatures).state == "unknown"


def test_one_rank_behind_while_the_rest_wait_in_a_collective(signatures) -> None:  # type: ignore[no-untyped-def]
    report = summarize(
        [snap(10, "TP0", *CAPTURE), snap(11, "TP1", *CAPTURE), snap(12, "TP2", *LOADING), snap(13, "TP3", *CAPTURE)],
        signatures,
    )
    assert report.summary == (
        "TP0, TP1, TP3 wait in all_reduce (torch.distributed) inside capture (cuda_graph_runner.py); "
        "TP2 is still in load_weights (models/llama.py) (weight_load) — TP2 is behind"
    )
    assert report.culprit_ranks == ("TP2",)
    assert report.stuck and report.state == "weight_load"
    assert [g.labels for g in report.groups] == [("TP0", "TP1", "TP3"), ("TP2",)]
    assert str(report.divergence) == "run_scheduler_process (scheduler.py:2500)"
    assert report.stall is not None and report.stall.ranks == ("TP2",)
    data = report.to_json()
    assert data["culprit_ranks"] == ["TP2"]
    assert data["groups"][0]["frames"][0] == "all_reduce (torch/distributed/distributed_c10d.py:2501)"
    assert set(data["stall"]) == {"state", "ranks", "frame", "summary"}
    # the tree: one root shared by all four ranks, split below run_scheduler_process
    (root,) = report.tree.children
    assert root.labels == ("TP0", "TP1", "TP2", "TP3")
    assert [child.labels for child in root.children] == [("TP0", "TP1", "TP3"), ("TP2",)]


def test_all_idle_is_healthy(signatures) -> None:  # type: ignore[no-untyped-def]
    idle_zmq = ("recv_pyobj (zmq/sugar/socket.py:80)", *IDLE)
    report = summarize(
        [snap(1, "TP0", *idle_zmq), snap(2, "TP1", *IDLE), snap(3, None, "run (uvicorn/server.py:60)", role="main")],
        signatures,
    )
    assert report.summary == ALL_IDLE
    assert not report.stuck and report.culprit_ranks == () and report.stall is None


def test_everyone_in_one_collective_points_outside(signatures) -> None:  # type: ignore[no-untyped-def]
    report = summarize([snap(1, "TP0", *CAPTURE), snap(2, "TP1", *CAPTURE)], signatures)
    assert report.summary.startswith("all ranks (TP[0-1]) wait in all_reduce (torch.distributed) inside capture")
    assert report.stuck and report.culprit_ranks == ()


def test_samples_tell_working_from_frozen(signatures) -> None:  # type: ignore[no-untyped-def]
    working = summarize(
        [snap(1, "TP0", *LOADING, moving=True), snap(2, "TP1", *LOADING, moving=True)], signatures, samples=3
    )
    assert not working.stuck and "working" in working.summary
    frozen = summarize(
        [snap(1, "TP0", *LOADING, moving=False), snap(2, "TP1", *LOADING, moving=False)], signatures, samples=3
    )
    assert frozen.stuck and "frozen" in frozen.summary


def test_repeated_dumps_of_one_process_are_samples(signatures) -> None:  # type: ignore[no-untyped-def]
    first = snap(5, "TP0", "read_shard (model_runner.py:10)", *LOADING)
    second = snap(5, "TP0", "read_shard (model_runner.py:12)", *LOADING)
    report = summarize([first, second], signatures)
    assert len(report.processes) == 1 and report.processes[0].moving is True


def test_realworld_dumps_get_a_sensible_headline(signatures) -> None:  # type: ignore[no-untyped-def]
    def headline(name: str) -> str:
        return summarize(parse_dump_text((REALWORLD / name).read_text()), signatures).summary

    assert headline("064_sglang-pp-watchdog-pyspy-dump.txt").startswith(
        "PP2 TP1 waits in gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)"
    )
    assert headline("067_sglang-watchdog-exception-abort-faulthandler.txt") == (
        "process #1 crashed (Fatal Python error: Aborted); last frame watchdog_thread (scheduler.py)"
    )
    assert headline("070_sglang-faulthandler-tail-extension-modules.txt") == (
        "process #1 crashed (fatal signal (faulthandler dump)); last frame event_loop_overlap (scheduler.py)"
    )


def test_fixture_headlines(signatures) -> None:  # type: ignore[no-untyped-def]
    report = summarize(
        parse_dump_text((STACKS_FIXTURES / "faulthandler-torchrun-interleaved.log").read_text()), signatures
    )
    assert report.culprit_ranks == ("local_rank 2",)
    report = summarize(parse_dump_text((STACKS_FIXTURES / "pyspy-subprocesses-idle.json").read_text()), signatures)
    assert report.summary == ALL_IDLE
