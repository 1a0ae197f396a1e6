"""Two starts in one file (a restarted container's `docker logs`, a relaunch appended to the same
file): the last start is judged; the earlier ones are listed with their outcome."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_json

LOGS = FIXTURES / "logs"


@pytest.mark.parametrize(
    ("first", "second", "verdict", "phase", "earlier"),
    [
        (
            "sglang/eagle3-tp8-hung-cuda-graph-247.log",
            "sglang/tp8-ready-serving.log",
            "ready",
            "serving",
            "ended stalled at cuda_graph",
        ),
        (
            "sglang/tp8-ready-serving.log",
            "sglang/eagle3-tp8-hung-cuda-graph-247.log",
            "stalled",
            "cuda_graph",
            "ended ready at serving",
        ),
        (
            "vllm/v1-tp4-worker-oom-engine-init-failed.log",
            "vllm/v1-085-tp4-ready-serving.log",
            "ready",
            "serving",
            "ended crashed at weight_load",
        ),
    ],
    ids=["hung-then-ready", "ready-then-hung", "vllm-crashed-then-ready"],
)
def test_the_last_start_is_judged(
    tmp_path: Path, first: str, second: str, verdict: str, phase: str, earlier: str
) -> None:
    # GIVEN a log holding one start and then another (bytes: `\r` bars stay one line)
    head, tail = (LOGS / first).read_bytes(), (LOGS / second).read_bytes()
    both = tmp_path / "both.log"
    both.write_bytes(head + tail)
    alone = run_json("analyze", "--post-mortem", str(LOGS / second))[1]
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(both))
    # THEN the verdict and phases are the second start's, its phases begin after the first start
    assert (report["verdict"], report["phase"]) == (verdict, phase) == (alone["verdict"], alone["phase"])
    first_lines = head.count(b"\n")
    assert min(span["start_line"] for span in report["phases"]) > first_lines
    # AND the earlier start is listed with its outcome, up to the second start's launch line
    listed = re.fullmatch(r"an earlier start in this log \(lines 1-(\d+)\) (.*)", report["notes"][-2])
    assert listed is not None and listed[2].startswith(earlier)
    assert first_lines <= int(listed[1]) < first_lines + 10
    assert report["notes"][-1] == f"the server started again at line {int(listed[1]) + 1}: this report is that start's"
    # AND no phase took "3038h" across the two starts
    assert all(span["seconds"] is None or span["seconds"] < 3600 for span in report["phases"])


def test_logs_of_several_nodes_are_no_restart(tmp_path: Path) -> None:
    # GIVEN one log per node, each beginning with its launch line (the two-node golden)
    parts = sorted((LOGS / "sglang").glob("two-node-tp16-node*.log"))
    assert len(parts) == 2
    # WHEN analysed together THEN no note says it started again
    _, report = run_json("analyze", "--post-mortem", *map(str, parts))
    assert not any("started again" in note for note in report["notes"])
