"""prime-rl's logs (its loguru format `HH:MM:SS {level:>7} message`): a trainer's set-up, its steps and end, and its
launcher's word of a process that failed, read as a torch job's phases."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import judge_text, root_text


def line(clock: str, level: str, message: str) -> str:
    """One record as prime-rl's logger writes it (src/prime_rl/utils/logger.py): the time, the level right-aligned to
    seven characters, the message."""
    return f"{clock} {level:>7} {message}"


# An RL trainer's set-up as train.py logs it (2025-11 -> 2026), up to its optimizer
SETUP = [
    line(
        "20:40:30",
        "INFO",
        "Starting RL trainer in World(world_size=2, rank=0, local_rank=0, local_world_size=2, num_nodes=1)",
    ),
    line("20:40:31", "INFO", "Initializing monitor (project='rl')"),
    line("20:40:32", "INFO", "Initializing model (name='/models/Qwen3-1.7B-Base')"),
    line("20:40:35", "INFO", "Injecting Prime LM head with chunk size None"),
    line("20:40:37", "WARNING", "Model uses tied word embeddings, so skipping the last-layer no-reshard optimization."),
    line("20:40:37", "INFO", "Initializing optimizer (lr=1e-06 weight_decay=0.01)"),
]


def test_a_trainer_that_stops_while_setting_up_its_model_stalled_in_weight_load(tmp_path: Path) -> None:
    # GIVEN a trainer's set-up that goes no further than its optimizer (no error, no training loop)
    # WHEN analysed post-mortem
    report = judge_text(tmp_path, "\n".join(SETUP) + "\n")
    # THEN a torch job stalled while it built and loaded its model
    assert (report["system"], report["phase"], report["verdict"]) == ("torch", "weight_load", "stalled"), report[
        "reason"
    ]


def test_a_trainer_that_ran_its_steps_and_finished_is_a_finished_job(tmp_path: Path) -> None:
    # GIVEN the same set-up, the training loop, two steps and the trainer's last line
    steps = [
        line("20:41:00", "INFO", "Starting training loop (max_steps=2)"),
        line("20:42:00", "SUCCESS", "Step 1 | Time: 60.10s | Loss: 0.0123 | Entropy: 0.4410"),
        line("20:43:00", "SUCCESS", "Step 2 | Time: 59.80s | Loss: 0.0119 | Entropy: 0.4391"),
        line("20:43:05", "SUCCESS", "RL trainer finished!"),
    ]
    # WHEN analysed post-mortem
    report = judge_text(tmp_path, "\n".join(SETUP + steps) + "\n")
    # THEN the job ran its own steps to its end
    assert (report["phase"], report["verdict"]) == ("serving", "finished"), report["reason"]


def test_the_launcher_saying_the_trainer_failed_is_the_crash(tmp_path: Path) -> None:
    # GIVEN the orchestrator beginning its NCCL weight broadcast (utils/client.py), then the launcher's word that the
    # trainer process exited with code 1 (entrypoints/rl.py)
    text = "\n".join(
        [
            line(
                "12:00:01", "INFO", "Initializing NCCL broadcast: 1 servers, inference_world_size=1, gpus_per_server=1"
            ),
            line("12:00:06", "ERROR", "Trainer failed with exit code 1"),
        ]
    )
    # WHEN analysed post-mortem
    report = judge_text(tmp_path, text + "\n")
    # THEN a crash while the process group was set up, the launcher's line its cause
    assert (report["phase"], report["verdict"]) == ("dist_init", "crashed"), report["reason"]
    assert root_text(report).endswith("Trainer failed with exit code 1")


def test_a_time_and_level_spaced_otherwise_is_not_prime_rls(tmp_path: Path) -> None:
    # GIVEN the trainer's first lines with one space between the time and every level (not loguru's `{level: >7}`)
    text = "\n".join(f"20:40:3{n} INFO Initializing model (name='m')" for n in range(4))
    # WHEN analysed THEN nothing of prime-rl's is read
    report = judge_text(tmp_path, text + "\n")
    assert report["phase"] != "weight_load", report["reason"]
