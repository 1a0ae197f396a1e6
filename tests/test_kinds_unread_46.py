"""Logs no line of which was read, each kind written from its format's source: nanoGPT's iteration and evaluation
prints (train.py), the `[LEVEL] asctime module: ` layout torchelastic's launcher logs through, and vLLM's
placement-group wait whose paste abridged its specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import judge_text, root_text


def test_nanogpt_iterations_are_a_jobs_steps(tmp_path: Path) -> None:
    # GIVEN nanoGPT's train.py under torchrun: an evaluation, then its iterations (first releases: no mfu)
    text = (
        "$ torchrun --standalone --nproc_per_node=8 train.py\n"
        "step 1600: train loss 3.8127, val loss 3.8409\n"
        + "".join(f"iter {n}: loss 3.{n:04d}, time 56{n % 10}.31ms\n" for n in range(1631, 1642))
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the job is in its steps and open, its last iteration the last progress
    assert (report["phase"], report["verdict"]) in (("serving", "stalled"), ("serving", "progressing"))
    assert root_text(report).startswith("iter 1641: loss ")


@pytest.mark.parametrize(
    "line",
    [
        "iter 250: loss 1.8214, time 13875.96ms, mfu 32.96%",
        "iter 7: loss 10.9861, time 312.05ms, mfu -100.00%",  # running_mfu is -1.0 for the first five iterations
        "step 2000: train loss 1.7648, val loss 1.8857",
    ],
)
def test_each_nanogpt_print_is_a_training_step(tmp_path: Path, line: str) -> None:
    # GIVEN one print of nanoGPT's loop WHEN judged THEN it places the job in its steps
    report = judge_text(tmp_path, line + "\n")
    assert report["phase"] == "serving"


_ELASTIC = "[{level}] 2021-12-08 12:28:26,{ms:03d} {module}: {message}\n"


def test_torchelastic_launch_lines_in_the_bracket_level_layout_are_read(tmp_path: Path) -> None:
    # GIVEN torch 1.10's torch.distributed.run under Kubeflow, each line `[LEVEL] asctime module: message`, the
    # paste cut inside the rendezvous join line
    text = (
        _ELASTIC.format(level="INFO", ms=50, module="run", message="Running torch.distributed.run with args: ['a.py']")
        + _ELASTIC.format(level="INFO", ms=98, module="api", message="Starting elastic_operator with launch configs:")
        + "  entrypoint       : /workspace/train.py\n"
        + "  rdzv_backend     : c10d\n"
        + _ELASTIC.format(level="INFO", ms=101, module="api", message="[default] starting workers for entrypoint: py")
        + _ELASTIC.format(level="INFO", ms=101, module="api", message="[default] Rendezvous'ing worker group")
        + _ELASTIC.format(
            level="INFO", ms=102, module="dynamic_rendezvous", message="The node 'worker-0_8_0' attempts to jo"
        ).rstrip("\n")
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the launcher was rendezvousing (launch, the README's rendezvous rule) and the log ends open there
    assert (report["phase"], report["verdict"]) in (("launch", "stalled"), ("launch", "progressing"))
    assert "Rendezvous'ing worker group" in root_text(report) or "attempts to jo" in root_text(report)


def test_an_abridged_placement_group_wait_is_still_the_launch_waiting(tmp_path: Path) -> None:
    # GIVEN vLLM's placement-group wait whose specs the paste replaced by `...`, then Ray's autoscaler's complaint
    text = (
        "Waiting for creating a placement group of specs for 70 seconds... \n"
        "Error: No available node types can fulfill resource request {'node:10.61.0.27': 0.001, 'GPU': 1.0}\n"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the launch waited for GPUs and never went on: stalled in launch, at the wait
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert root_text(report).startswith("Waiting for creating a placement group of specs for 70 seconds")


def test_a_log_viewers_stamp_and_bar_before_a_programs_own_stamp_is_an_envelope(tmp_path: Path) -> None:
    # GIVEN TEI's router lines as Docker Desktop's log view copies them: its stamp to the millisecond and ` | `, then
    # the program's own tracing line (its RFC 3339 stamp, level, target, file)
    view = "2025-11-16 14:48:{second:02d}.055 | 2025-11-16T11:48:{second:02d}.053494Z  INFO {message}\n"
    text = view.format(
        second=19,
        message='text_embeddings_router: router/src/main.rs:203: Args { model_id: "BAAI/bge-m3", revision: None }',
    ) + view.format(second=21, message="text_embeddings_router: router/src/lib.rs:188: Maximum number of tokens")
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the view's column is taken off and TEI's own lines are read: its launch, then nothing more
    assert (report["system"], report["phase"], report["verdict"]) == ("tgi", "launch", "stalled")
