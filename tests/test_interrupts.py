"""A person's Ctrl-C after a long silence ends a stall: the verdict is stalled where the run was,
never a crash, whatever the interrupt's traceback and what it sets off look like."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_json

# Stalled start-ups of three systems (post-mortem they end mid-startup with no error)
STALLED = [
    FIXTURES / "logs" / "sglang" / "eagle3-tp8-hung-cuda-graph-247.log",
    FIXTURES / "logs" / "vllm" / "v1-compose-hang-piecewise-capture.log",
    FIXTURES / "logs" / "torch" / "gloo-hang-dist-init.log",
]

# What Ctrl-C leaves, as CPython and the launchers print it (the `^C` echo is the terminal's): one file each
INTERRUPTS = FIXTURES / "interrupts"
TAILS = sorted(path for path in INTERRUPTS.glob("*.txt") if path.stem != "torchrun")


@pytest.mark.slow
@pytest.mark.parametrize("tail", TAILS, ids=lambda p: p.stem)
@pytest.mark.parametrize("log", STALLED, ids=lambda p: p.stem)
def test_ctrl_c_after_a_stall_is_the_same_stall(tmp_path: Path, log: Path, tail: Path) -> None:
    # GIVEN a start-up that stalled, and the same log with a Ctrl-C and its traceback appended
    plain = run_json("analyze", "--post-mortem", str(log))[1]
    assert plain["verdict"] == "stalled"
    interrupted = tmp_path / "interrupted.log"
    interrupted.write_bytes(log.read_bytes() + tail.read_bytes())  # bytes: a `\r` bar stays one line
    # WHEN analysed, post-mortem and live
    for mode in ("--post-mortem", "--live"):
        code, report = run_json("analyze", mode, str(interrupted))
        # THEN it is the same stall (phase, root cause), never a crash, and the reason says who stopped it
        assert (report["verdict"], report["phase"], code) == ("stalled", plain["phase"], 4), report["reason"]
        assert report["root_cause"]["line"] == plain["root_cause"]["line"]
        assert report["reason"].startswith(f"interrupted during {plain['phase']}")


def test_torchrun_passing_on_ctrl_c_is_an_interrupt(tmp_path: Path) -> None:
    # GIVEN the gloo hang, then torchrun's own reaction to Ctrl-C (SignalException 2) and the `^C` echo
    log = FIXTURES / "logs" / "torch" / "gloo-hang-dist-init.log"
    interrupted = tmp_path / "interrupted.log"
    interrupted.write_bytes(log.read_bytes() + (INTERRUPTS / "torchrun.txt").read_bytes())
    _, report = run_json("analyze", "--post-mortem", str(interrupted))
    # THEN stalled where it was; torchrun's traceback is not the cause
    assert (report["verdict"], report["phase"]) == ("stalled", "dist_init"), report["reason"]
