"""py-spy dumps pasted as the log, or as part of one, with no `Pyspy dump for PID` line of SGLang's above them (issue
25, kind B): `py-spy dump --pid N`'s text (src/dump.rs: `Process {pid}: {cmdline}`, `Python v{version} ({exe})`, a
blank line, then per thread `Thread {tid} ({idle|active|active+gil}): "{name}"` and its frames innermost first,
`    {function} ({file}:{line})`, `--locals`' lines eight and twelve spaces in) is a stack like a traceback's: each
thread a group whose frames the anchors read, so the dump places the rank where it was. One dump says where each thread
was when it was taken, not whether it moved after: the report says the phase rests on a stack's frames alone and its
confidence is low."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logphase import pipeline
from logphase.frames import is_pyspy_thread
from logphase.packs.loading import load_packs
from tests.conftest import judge_text
from tests.equivalence.reports import AS_OF, analysed, plain

# SGLang 0.5.3 names (py-spy's short file names: `managers/` and `model_executor/` have no __init__.py, `utils/` has):
# a TP0 scheduler serving, its main thread waiting in the request broadcast of its event loop; the watchdog thread on
# the CPU
SERVING_DUMP = (
    "Process 3438121: sglang::scheduler_TP0\n"
    "Python v3.12.11 (/usr/bin/python3.12)\n"
    "\n"
    'Thread 3438121 (idle): "MainThread"\n'
    "    broadcast (torch/distributed/distributed_c10d.py:2714)\n"
    "    wrapper (torch/distributed/c10d_logger.py:81)\n"
    "    broadcast_pyobj (utils/common.py:1083)\n"
    "    recv_requests (scheduler.py:1151)\n"
    "    event_loop_overlap (scheduler.py:963)\n"
    "    decorate_context (torch/utils/_contextlib.py:120)\n"
    "    run_scheduler_process (scheduler.py:2858)\n"
    "    run (multiprocessing/process.py:108)\n"
    "    _bootstrap (multiprocessing/process.py:314)\n"
    "    _main (multiprocessing/spawn.py:135)\n"
    "    spawn_main (multiprocessing/spawn.py:122)\n"
    "    <module> (<string>:1)\n"
    'Thread 3439002 (active+gil): "Thread-3 (watchdog_thread)"\n'
    "    watchdog_thread (scheduler.py:2351)\n"
    "    run (threading.py:1012)\n"
    "    _bootstrap_inner (threading.py:1075)\n"
    "    _bootstrap (threading.py:1032)\n"
)
# the same scheduler's start-up: the main thread capturing CUDA graphs (cuda_graph_runner.capture_one_batch_size, under
# ModelRunner.init_device_graphs), `dump --locals` showing the capture's arguments and locals
CAPTURE_DUMP = (
    "Process 3438121: sglang::scheduler_TP0\n"
    "Python v3.12.11 (/usr/bin/python3.12)\n"
    "\n"
    'Thread 3438121 (active): "MainThread"\n'
    "    synchronize (torch/cuda/__init__.py:985)\n"
    "        Arguments:\n"
    "            device: None\n"
    "    capture_one_batch_size (cuda_graph_runner.py:602)\n"
    "        Arguments:\n"
    "            self: <CudaGraphRunner at 0x7f2a3b4c5750>\n"
    "            bs: 160\n"
    "        Locals:\n"
    "            graph: <CUDAGraph at 0x7f2a1c7fe650>\n"
    "    capture (cuda_graph_runner.py:447)\n"
    "    __init__ (cuda_graph_runner.py:381)\n"
    "    init_device_graphs (model_runner.py:1840)\n"
    "    initialize (model_runner.py:401)\n"
    "    __init__ (model_runner.py:299)\n"
    "    __init__ (tp_worker.py:95)\n"
    "    __init__ (scheduler.py:352)\n"
    "    run_scheduler_process (scheduler.py:2841)\n"
    'Thread 3439104 (idle): "Thread-2"\n'
    "    wait (threading.py:359)\n"
    "    _bootstrap (threading.py:1032)\n"
)
SGLANG_START = (
    "[2025-10-29 11:20:01 TP0] Init torch distributed begin.\n"
    "[2025-10-29 11:20:03 TP0] Load weight begin. avail mem=78.50 GB\n"
    "[2025-10-29 11:21:40 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.12 GB, "
    "mem usage=15.05 GB.\n"
)


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "dump.log")


def _against(report: dict[str, Any]) -> list[str]:
    return list(report["evidence"]["against"])


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('Thread 3438121 (idle): "MainThread"', True),
        ('Thread 3439002 (active+gil): "Thread-3 (watchdog_thread)"', True),
        ("Thread 0x7F3A2B1C0740 (active)", True),  # no name; `{:#X}` of Python's id where py-spy has no OS id
        ("Thread 0x00007fbaf7ff7640 (most recent call first)", False),  # faulthandler's, its colon cut
        ('Thread 12 (running): "worker"', False),
    ],
)
def test_a_thread_line_is_py_spys_by_its_status(line: str, expected: bool) -> None:
    # GIVEN a line that begins `Thread <id> (` WHEN asked whether py-spy's dump prints it
    # THEN only py-spy's three statuses make it one
    assert is_pyspy_thread(line) is expected


def test_a_dump_pasted_alone_places_the_rank_and_says_it_is_one_stack(tmp_path: Path) -> None:
    # GIVEN a paste that is one py-spy dump of a serving scheduler, nothing else
    report = _judge(tmp_path, SERVING_DUMP)
    # THEN it is placed in serving by its main thread's frames (the innermost that proves it: broadcast_pyobj, line
    # 7); post-mortem the log ends there with no error, stalled, with low confidence as one stack says where the
    # thread was, not whether it moved after
    assert (report["verdict"], report["phase"], report["confidence"]) == ("stalled", "serving", "low")
    said = (
        "serving placed by a stack's frames alone (`broadcast_pyobj (utils/common.py)`, line 7): where its thread was"
        " when the stack was printed, not whether it moved after"
    )
    assert said in report["reason"]
    assert said in _against(report)
    # AND no line of the run reports a step: the frame that placed it is where the run stopped, its cause (the
    # realworld labels of three such pastes, 984, 1233, 1234, each quote that frame)
    cause = report["root_cause"]
    assert (cause["line"], cause["text"]) == (7, "    broadcast_pyobj (utils/common.py:1083)")
    # AND the stack is the rank's its title names (`sglang::scheduler_TP0`)
    assert report["ranks"] == ["TP0"]


def test_a_dumps_locals_do_not_end_its_threads_frames(tmp_path: Path) -> None:
    # GIVEN a `dump --locals` paste whose frames that prove the capture come after the innermost frame's locals
    report = _judge(tmp_path, CAPTURE_DUMP)
    # THEN the capture places the rank (capture_one_batch_size, line 8, under its arguments), and the locals' lines
    # are no lines of the program's
    assert (report["verdict"], report["phase"]) == ("stalled", "cuda_graph")
    assert "(`capture_one_batch_size (cuda_graph_runner.py)`, line 8)" in report["reason"]


def test_a_ranks_dump_inside_a_larger_log_places_the_rank_past_its_last_line(tmp_path: Path) -> None:
    # GIVEN SGLang's TP0 lines up to its weights loaded, then TP0's py-spy dump pasted below them (no `Pyspy dump
    # for PID` line: taken by hand), its main thread capturing CUDA graphs
    report = _judge(tmp_path, SGLANG_START + "\n" + CAPTURE_DUMP)
    # THEN the run is in cuda_graph, which the dump alone says (its capture frame is line 12)
    assert (report["verdict"], report["phase"], report["system"]) == ("stalled", "cuda_graph", "sglang")
    assert (
        "cuda_graph placed by a stack's frames alone (`capture_one_batch_size (cuda_graph_runner.py)`, line 12)"
        in (report["reason"])
    )
    # AND the dump's frames are TP0's, the rank its `Process` line's title names (`sglang::scheduler_TP0`)
    assert report["ranks"] == ["TP0"]
    assert [(span["phase"], span["rank"], span["start_line"]) for span in report["phases"]][-1] == (
        "cuda_graph",
        "TP0",
        12,
    )
    # AND the fast path (which reads only the lines that may matter) gives the same report as reading every line
    log = tmp_path / "dump.log"
    packs = load_packs()
    fast = analysed([log], packs, pipeline.Options(as_of=AS_OF, post_mortem=True, fast=True))
    assert fast == plain([log], packs)


def test_a_phase_a_line_placed_is_not_said_to_rest_on_the_dump(tmp_path: Path) -> None:
    # GIVEN SGLang's capture begun (its own line), then the same dump
    text = (
        SGLANG_START + "[2025-10-29 11:21:45 TP0] Capture cuda graph begin. This can take up to several minutes. "
        "avail mem=20.10 GB\n" + CAPTURE_DUMP
    )
    report = _judge(tmp_path, text)
    # THEN in cuda_graph, from the line: nothing said of frames alone
    assert (report["verdict"], report["phase"]) == ("stalled", "cuda_graph")
    assert not any("frames alone" in doubt for doubt in _against(report))


def test_frame_shaped_lines_without_py_spys_thread_line_place_nothing(tmp_path: Path) -> None:
    # GIVEN the main thread's frames of the serving dump without its thread line (four spaces, `name (file:line)`:
    # a shape any indented listing may have)
    frames = "".join(line + "\n" for line in SERVING_DUMP.splitlines() if line.startswith("    "))
    report = _judge(tmp_path, frames)
    # THEN nothing is placed
    assert (report["verdict"], report["phase"]) == ("unknown", None)


def test_a_title_names_the_threads_of_its_own_dump_only(tmp_path: Path) -> None:
    # GIVEN TP0's py-spy header, a line of another program, then a dump's thread whose header the paste lost
    lines = CAPTURE_DUMP.splitlines(keepends=True)
    text = "".join(lines[:3]) + "waiting for the next dump\n" + "".join(lines[3:])
    report = _judge(tmp_path, text)
    # THEN the capture still places the stack, but on no rank: the title was another dump's
    assert report["phase"] == "cuda_graph"
    assert report["ranks"] == []
