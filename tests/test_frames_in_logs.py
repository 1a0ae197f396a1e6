"""Where a traceback in a log places its rank: the step its frames show, the call its innermost source line
makes when the paste is cut there, and a serving loop's frame while the server is still starting."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_json

SRT = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def _analyze(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))[1]


def _scheduler_traceback(stamp: str, calls: list[tuple[str, int, str, str]], tag: str = " TP0") -> list[str]:
    lines = [f"[{stamp}{tag}] Scheduler hit an exception: Traceback (most recent call last):"]
    for path, line, function, code in calls:
        lines += [f'  File "{SRT}/{path}", line {line}, in {function}', f"    {code}"]
    return lines


def test_a_traceback_cut_under_a_frame_is_placed_by_the_call_its_source_line_makes(tmp_path: Path) -> None:
    # GIVEN a scheduler traceback cut after ModelRunner.__init__'s line that calls init_torch_distributed
    lines = _scheduler_traceback(
        "2025-04-21 02:05:39",
        [
            ("managers/scheduler.py", 2059, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)"),
            ("model_executor/model_runner.py", 183, "__init__", "min_per_gpu_memory = self.init_torch_distributed()"),
        ],
    )
    # WHEN analysed THEN crashed, in dist_init: the call names the step the next frame would have shown
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "dist_init")


def test_a_call_that_names_no_step_leaves_the_frames_phase(tmp_path: Path) -> None:
    # GIVEN the same traceback cut under a line that calls a helper no anchor knows
    lines = _scheduler_traceback(
        "2025-04-21 02:05:39",
        [
            ("managers/scheduler.py", 2059, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)"),
            ("model_executor/model_runner.py", 183, "__init__", "self.check_quantized_moe_compatibility()"),
        ],
    )
    # WHEN analysed THEN crashed at launch (run_scheduler_process), nothing more
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "launch")


EVENT_LOOP = [("managers/scheduler.py", 2336, "run_scheduler_process", "scheduler.event_loop_overlap()")]
HTTP_START = [
    "[2025-06-27 19:02:10] INFO:     Started server process [2122]",
    "[2025-06-27 19:02:10] INFO:     Waiting for application startup.",
    "[2025-06-27 19:02:10] INFO:     Application startup complete.",
]


# The same lines as collected by `docker logs -t` and by `kubectl logs --prefix` (their envelopes are removed first)
WRAPPERS: dict[str, Callable[[int, str], str]] = {
    "plain": lambda n, line: line,
    "docker logs -t": lambda n, line: f"2025-06-27T19:02:{10 + n:02d}.123456789Z {line}",
    "kubectl logs --prefix": lambda n, line: f"[pod/sglang-7d9f-abcde/server] {line}",
}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_a_crash_in_the_event_loop_while_the_server_starts_is_the_warmups(tmp_path: Path, wrapper: str) -> None:
    # GIVEN uvicorn starting (no ready line yet), then the scheduler of a TP=1 server (untagged since SGLang
    # 0.4.6) failing inside its event loop, as pasted or as a collector kept them
    lines = HTTP_START + _scheduler_traceback("2025-06-27 19:02:11", EVENT_LOOP, tag="")
    wrapped = [WRAPPERS[wrapper](n, line) for n, line in enumerate(lines)]
    # WHEN analysed THEN crashed during warmup: the loop was running the warmup request
    report = _analyze(tmp_path, wrapped)
    assert (report["verdict"], report["phase"]) == ("crashed", "warmup")


def test_a_crash_in_the_event_loop_of_a_log_that_starts_mid_run_is_the_servings(tmp_path: Path) -> None:
    # GIVEN only the scheduler failing inside its event loop (an excerpt of a running server)
    lines = _scheduler_traceback("2025-06-27 19:02:11", EVENT_LOOP, tag="")
    # WHEN analysed THEN crashed during serving
    report = _analyze(tmp_path, lines)
    assert (report["verdict"], report["phase"]) == ("crashed", "serving")
