"""Ray Train's own output (ray/tune/experimental/output.py TrainReporter and ray/train/_internal/storage.py, ray
2.9.2): an iteration's result and checkpoint are the job's steps, and `Training completed after N iterations` its
end (patterns/ray.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_json

ITERATION = [
    "Training finished iteration 1 at 2024-02-11 10:41:19. Total running time: 26s",
    "Training saved a checkpoint for iteration 1 at: (local)/mnt/cluster_storage/TorchTrainer_2024-02-11/"
    "checkpoint_000000",
    "(RayTrainWorker pid=3139801) Checkpoint successfully created at: Checkpoint(filesystem=local, "
    "path=/mnt/cluster_storage/TorchTrainer_2024-02-11/checkpoint_000000)",
]


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


def test_an_iteration_reported_and_checkpointed_is_the_jobs_steps(tmp_path: Path) -> None:
    # GIVEN TrainReporter's `Training finished iteration {n} at {time}. Total running time: {t}` and `Training saved a
    # checkpoint for iteration {n} at: ({fs}){path}`, and a worker's `Checkpoint successfully created at: Checkpoint(`
    # WHEN analysed
    _, report = _analyze(tmp_path, ITERATION)
    # THEN a Ray job in its steps, not finished: the worker's checkpoint line its last progress
    assert (report["system"], report["phase"], report["verdict"]) == ("ray", "serving", "stalled")
    assert report["root_cause"]["line"] == 3


def test_training_completed_after_its_iterations_is_a_finished_job(tmp_path: Path) -> None:
    # GIVEN an iteration, then on_trial_complete's `Training completed after {n} iterations at {time}. Total running
    # time: {t}`
    lines = [*ITERATION, "Training completed after 1 iterations at 2024-02-11 10:41:25. Total running time: 32s"]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN the job finished, said from that line
    assert (code, report["phase"], report["verdict"]) == (0, "serving", "finished")
    assert report["reason"] == (
        "the job finished, as its own end line says: Training completed after 1 iterations at 2024-02-11 10:41:25. "
        "Total running time: 32s (line 4)"
    )


def test_training_errored_is_no_end(tmp_path: Path) -> None:
    # GIVEN an iteration, then on_trial_error's `Training errored after {n} iterations at {time}. ...`
    lines = [*ITERATION, "Training errored after 1 iterations at 2024-02-11 10:41:25. Total running time: 32s"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job did not finish
    assert report["verdict"] != "finished"
