"""Training jobs on torch read from their frameworks' own lines: PyTorch Lightning's seed and process-group
set-up, inductor's max-autotune reports, Hugging Face Trainer's start and end of training (its own lines and wandb's run
summary), verl's step metrics and async rollout batches, torchtune's checkpoints, TRL's wait for its vLLM server and
gloo's failed checks (patterns/torch.toml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_json


def _analyze(tmp_path: Path, lines: list[str]) -> tuple[int, dict[str, Any]]:
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    return run_json("analyze", "--post-mortem", str(log))


def _hf_steps(first: int, last: int) -> list[str]:
    """transformers' ProgressCallback: a tqdm bar of optimizer steps and the logged dict of each step."""
    lines: list[str] = []
    for step in range(first, last):
        lines.append(f" 50%|█████     | {step}/200 [01:{step % 60:02d}<01:40,  1.00it/s]")
        lines.append(f"{{'loss': 0.{step:04d}, 'learning_rate': 2e-05, 'epoch': 1.0}}")
    return lines


def test_lightning_ranks_that_began_init_process_group_and_printed_nothing_more_stalled_in_dist_init(
    tmp_path: Path,
) -> None:
    # GIVEN lightning_fabric's lines for a 2-process job: each rank seeds (`[rank: r] Global seed set to s`) and
    # announces `Initializing distributed: GLOBAL_RANK: r, MEMBER: r+1/2`, then nothing
    lines = [
        "[rank: 0] Global seed set to 23",
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2",
        "[rank: 1] Global seed set to 23",
        "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2",
    ]
    # WHEN the log is analysed post-mortem
    _, report = _analyze(tmp_path, lines)
    # THEN the job is a torch job stalled in dist_init, its last news rank 1's set-up line
    assert (report["system"], report["phase"], report["verdict"]) == ("torch", "dist_init", "stalled")
    assert report["reason"] == "the log ends during dist_init with no error (line 4)"


def test_lightning_1_4_initializing_ddp_from_half_of_a_two_node_world_is_stalled_in_dist_init(tmp_path: Path) -> None:
    # GIVEN pytorch_lightning 1.4's accelerator summary and `initializing ddp: GLOBAL_RANK: r, MEMBER: r+1/8` (its
    # plugins/training_type/ddp.py, before init_process_group) from ranks 0-3 only, out of order, then nothing
    lines = [
        "GPU available: True, used: True",
        "TPU available: False, using: 0 TPU cores",
        "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8",
        "initializing ddp: GLOBAL_RANK: 2, MEMBER: 3/8",
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8",
        "initializing ddp: GLOBAL_RANK: 3, MEMBER: 4/8",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is stalled in dist_init, its last news the last rank's set-up line
    assert (report["phase"], report["verdict"]) == ("dist_init", "stalled")
    assert report["reason"] == "the log ends during dist_init with no error (line 6)"


def test_lightning_1_5_lower_case_initializing_distributed_is_the_process_group_set_up(tmp_path: Path) -> None:
    # GIVEN pytorch_lightning 1.5's `initializing distributed: ...` (utilities/distributed.py, lower case)
    lines = ["initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the rank is in dist_init
    assert report["phase"] == "dist_init"


def test_lightning_handing_its_processes_to_slurm_under_hydra_is_launch(tmp_path: Path) -> None:
    # GIVEN a Hydra-logged script (`[asctime][logger][LEVEL] - `) building its Trainer under srun: the Trainer's
    # `Multi-processing is handled by Slurm.` and a line cut inside its logger name
    lines = [
        "[2021-12-19 17:50:03,016][src.train][INFO] - Instantiating logger <pytorch_lightning.loggers.CSVLogger>",
        "[2021-12-19 17:50:03,017][src.train][INFO] - Instantiating trainer <pytorch_lightning.Trainer>",
        "[2021-12-19 17:50:03,095][pytorch_lightning.utilities.distributed][INFO] - "
        "Multi-processing is handled by Slurm.",
        "[2021-12-19 17:50:03,097][pytorch_lightning.utilities.distri",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job was launched and had not begun its process group: stalled there; its last step is the Trainer's
    # instantiation, the Slurm line after it a note of what Lightning found (configuration), no step
    assert (report["phase"], report["verdict"]) == ("launch", "stalled")
    assert report["root_cause"]["line"] == 2


def test_lightning_hydra_template_instantiations_are_launch_steps(tmp_path: Path) -> None:
    # GIVEN the Lightning + Hydra template's script building its objects (`Instantiating <what> <target>`, the later
    # template's `Instantiating callbacks...`), Lightning's accelerator notes after them, nothing more
    lines = [
        "[2024-10-03 17:21:59,400][__main__][INFO] - Instantiating datamodule <src.data.mnist.MNISTDataModule>",
        "[2024-10-03 17:21:59,410][__main__][INFO] - Instantiating model <src.models.mnist_module.MNISTLitModule>",
        "[2024-10-03 17:21:59,420][__main__][INFO] - Instantiating callbacks...",
        "[2024-10-03 17:21:59,447][__main__][INFO] - Instantiating trainer <lightning.Trainer>",
        "GPU available: True (cuda), used: True",
        "TPU available: False, using: 0 TPU cores",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN a torch job stalled at launch, its last step the Trainer's instantiation
    assert (report["system"], report["phase"], report["verdict"]) == ("torch", "launch", "stalled")
    assert report["root_cause"]["line"] == 4


def test_llamafactory_trainer_log_jsonl_lines_are_the_jobs_steps(tmp_path: Path) -> None:
    # GIVEN LLaMA-Factory's trainer_log.jsonl (LogCallback.on_log: `current_steps` first), the last line cut
    lines = [
        '{"current_steps": 43, "total_steps": 82, "loss": 0.6608, "eval_loss": null, "epoch": 0.522, '
        '"percentage": 52.44, "elapsed_time": "0:27:55", "remaining_time": "0:25:19"}',
        '{"current_steps": 44, "total_steps": 82, "loss": 0.8096, "eval_loss": null, "epoch": 0.534, '
        '"percentage": 53.66, "elapsed_time": "0:28:40", "remaining_time": "0:24:45"}',
        '{"current_steps": 45, "total_steps": 82, "loss": 0.5613, "eval_loss": null, "epoch": 0.546, '
        '"percentage": 54.88, "elapsed_time": "0:29:15", "remaining_time": "',
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is in its training steps (serving), read as torch's
    assert (report["system"], report["phase"]) == ("torch", "serving")
    assert report["last_line"]["line"] == 3


def test_lightning_2_seed_line_alone_places_the_job_at_launch(tmp_path: Path) -> None:
    # GIVEN lightning 2.x's `Seed set to {seed}` under the rank prefix, nothing after it
    lines = ["[rank: 0] Seed set to 42"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the process was launched and had not begun its process group
    assert report["phase"] == "launch"


def test_inductor_autotune_reports_are_torch_compile_under_way(tmp_path: Path) -> None:
    # GIVEN select_algorithm.py's max-autotune reports to stderr, in the 2.2+ form and the later `for N choices` form
    lines = [
        "AUTOTUNE mm(4x4096, 4096x8)",
        "  mm 0.0134 ms 100.0%",
        "SingleProcess AUTOTUNE benchmarking takes 1.3427 seconds and 8.8429 seconds precompiling",
        "SubProcess AUTOTUNE benchmarking takes 0.3414 seconds and 0.3730 seconds precompiling for 20 choices",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the phase is compile, and its last report is the line last read
    assert report["phase"] == "compile"
    assert report["last_line"]["line"] == 4


def test_hf_trainer_training_completed_after_its_steps_is_a_finished_job(tmp_path: Path) -> None:
    # GIVEN Trainer's step bars and logged dicts, then `Training completed. Do not forget to share your model on
    # huggingface.co/models =)` (trainer.py, after the loop over epochs)
    lines = [
        *_hf_steps(100, 104),
        "",
        "",
        "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "",
        "",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN the job finished, said from its own end line
    assert (code, report["verdict"]) == (0, "finished")
    assert report["reason"].startswith("the job finished, as its own end line says: Training completed.")


def test_hf_trainer_end_glued_to_the_last_step_dict_still_ends_the_job(tmp_path: Path) -> None:
    # GIVEN the end message pasted on the same line as the last step's dict (its leading newlines lost)
    lines = [
        *_hf_steps(100, 103),
        "{'loss': 0.0103, 'epoch': 1.0}Training completed. Do not forget to share your model on "
        "huggingface.co/models =)",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job finished
    assert report["verdict"] == "finished"


def test_hf_train_metrics_table_is_the_end_of_training_but_eval_metrics_is_not(tmp_path: Path) -> None:
    # GIVEN log_metrics("train", ...)'s header `***** train metrics *****` and its rows after the steps
    ended = [*_hf_steps(100, 103), "***** train metrics *****", "  epoch                    =        3.0"]
    # and the same steps followed by `***** eval metrics *****` (evaluation may run mid-training)
    evaluated = [*_hf_steps(100, 103), "***** eval metrics *****", "  eval_loss               =     0.7228"]
    # WHEN each is analysed
    _, after_train = _analyze(tmp_path, ended)
    _, after_eval = _analyze(tmp_path, evaluated)
    # THEN the train table finishes the job and the eval table does not
    assert after_train["verdict"] == "finished"
    assert after_eval["verdict"] != "finished"


def test_hf_train_runtime_dict_after_the_steps_is_the_end_of_training(tmp_path: Path) -> None:
    # GIVEN Trainer's steps, then the dict ProgressCallback prints of `self.log(metrics)` after the loop:
    # speed_metrics("train")'s `train_runtime`, `train_samples_per_second`, `train_steps_per_second`, then `train_loss`
    # and `epoch`
    lines = [
        *_hf_steps(100, 103),
        "{'train_runtime': 812.4, 'train_samples_per_second': 9.8, 'train_steps_per_second': 0.3, "
        "'train_loss': 1.2, 'epoch': 3.0}",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN the job finished in its steps, said from that dict
    assert (code, report["phase"], report["verdict"]) == (0, "serving", "finished")
    assert report["reason"] == (
        "the job finished, as its own end line says: {'train_runtime': 812.4, 'train_samples_per_second': 9.8, "
        "'train_steps_per_second': 0.3, 'train_loss': 1.2, 'epoch': 3.0} (line 7)"
    )


def test_hf_eval_dict_is_no_end_of_training(tmp_path: Path) -> None:
    # GIVEN Trainer's steps, then an evaluation's dict (`eval_runtime`: evaluation may run mid-training)
    evaluated = "{'eval_loss': 0.98, 'eval_runtime': 12.3, 'eval_samples_per_second': 81.3, 'epoch': 1.0}"
    lines = [*_hf_steps(100, 103), evaluated]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is in its steps and has not finished
    assert (report["phase"], report["verdict"]) == ("serving", "stalled")


def test_hf_eval_dict_alone_places_the_job_in_its_steps(tmp_path: Path) -> None:
    # GIVEN only an evaluation's dict of one dataset of an eval_dataset dict (`eval_{name}_loss`, speed_metrics'
    # `eval_{name}_runtime`, ..., `epoch`)
    lines = [
        "{'eval_test_gsm8k_loss': 1.1564, 'eval_test_gsm8k_runtime': 7.2756, "
        "'eval_test_gsm8k_samples_per_second': 259.496, 'eval_test_gsm8k_steps_per_second': 4.123, 'epoch': 1.0}"
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is in its steps, not finished
    assert (report["system"], report["phase"], report["verdict"]) == ("torch", "serving", "stalled")


def test_wandb_run_summary_with_train_runtime_is_the_end_of_training(tmp_path: Path) -> None:
    # GIVEN wandb's footer: `Run summary:` and PrinterTerm.grid's rows (key right-aligned, a space, the value) behind
    # termlog's `wandb: `, one of them the HF Trainer's `train/train_runtime`, the paste indented by four spaces
    lines = [
        "    wandb: Run summary:",
        "    wandb:                     train/loss 0.0007",
        "    wandb:            train/train_runtime 11434.0771",
        "    wandb: train/train_samples_per_second 68.22",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN the training job finished, said from the train_runtime row
    assert (code, report["verdict"]) == (0, "finished")
    assert report["reason"] == (
        "the job finished, as its own end line says: wandb:            train/train_runtime 11434.0771 (line 3)"
    )


def test_wandb_run_history_sparkline_and_footer_alone_say_nothing_of_an_end(tmp_path: Path) -> None:
    # GIVEN wandb's footer after a failed run: `Run history:` (a sparkline per key) and the sync hint, no summary
    lines = [
        "wandb: Run history:",
        "wandb:            train/train_runtime ▁",
        "wandb: You can sync this run to the cloud by running:",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN nothing says the job finished
    assert report["verdict"] == "unknown"


def test_verl_step_metrics_are_the_jobs_steps(tmp_path: Path) -> None:
    # GIVEN verl's console logger (concat_dict_to_str: `step:{step}`, then `{k}:{v:.3f}` joined by ` - `) on the
    # driver's Ray task, after two training steps
    lines = [
        "(main_task pid=1367807) step:1 - timing/gen:305.090 - timing/verify:8.531 - critic/score/mean:0.381",
        "(main_task pid=1367807) step:2 - timing/gen:298.112 - timing/verify:8.204 - critic/score/mean:0.402",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is in its steps, the last step line its last progress
    assert report["phase"] == "serving"
    assert report["verdict"] == "stalled"
    assert report["root_cause"]["line"] == 2


def test_verl_async_rollout_batches_then_an_engine_core_exception_is_a_crash_while_serving(tmp_path: Path) -> None:
    # GIVEN verl's chat scheduler (chat_scheduler.py: `[ChatCompletionScheduler] generate_sequences sampling params:
    # {...}` as a batch is sent, `... generate_sequences done` once answered) for two rollout rounds, then vLLM's
    # engine core (in its Ray actor) logging `EngineCore hit an exception:` cut inside its traceback
    params = "{'model': '/models/Qwen2.5-3B', 'temperature': 1.0, 'top_p': 1}"
    lines = [
        f"[ChatCompletionScheduler] generate_sequences sampling params: {params}",
        "[ChatCompletionScheduler] generate_sequences done",
        f"[ChatCompletionScheduler] generate_sequences sampling params: {params}",
        "[ChatCompletionScheduler] generate_sequences done",
        f"[ChatCompletionScheduler] generate_sequences sampling params: {params}",
        "(AsyncvLLMServer pid=72963) ERROR 05-08 15:30:47 [core.py:390] EngineCore hit an exception: Traceb",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the rollout engine was serving requests when it failed: crashed in serving, the engine's exception the cause
    assert (report["phase"], report["verdict"]) == ("serving", "crashed")
    assert report["root_cause"]["line"] == 6


def test_verl_rollout_batches_alone_are_open_in_serving(tmp_path: Path) -> None:
    # GIVEN one rollout batch answered and the next one sent, nothing after it
    lines = [
        "[ChatCompletionScheduler] generate_sequences sampling params: {'temperature': 1.0}",
        "[ChatCompletionScheduler] generate_sequences done",
        "[ChatCompletionScheduler] generate_sequences sampling params: {'temperature': 1.0}",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is open in serving, its last step the batch sent
    assert report["phase"] == "serving"
    assert report["verdict"] in {"stalled", "progressing"}
    assert report["root_cause"]["line"] == 3


def test_a_training_bar_wider_than_200_cells_is_the_loop(tmp_path: Path) -> None:
    # GIVEN finetrainers' `Training steps` bar at 0/5000 on a wide terminal (tqdm's dynamic ncols: 234 cells)
    lines = ["Training steps:   0%|" + " " * 234 + "| 0/5000 [00:00<?, ?it/s]"]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is in its steps
    assert report["phase"] == "serving"


def test_a_gloo_enforce_failure_with_no_phase_line_is_a_crash_in_dist_init(tmp_path: Path) -> None:
    # GIVEN gloo's EnforceNotMet text `[enforce fail at {file}:{line}] {condition}. {msg}`, raised in
    # process-group set-up
    lines = [
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
        "Unable to find address for: eth0",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN it crashed in dist_init, the enforce line its root cause
    assert (report["phase"], report["verdict"]) == ("dist_init", "crashed")
    assert report["root_cause"]["line"] == 1


def test_a_non_gloo_enforce_failure_is_not_read_as_a_process_group_error(tmp_path: Path) -> None:
    # GIVEN c10's own `[enforce fail at alloc_cpu.cpp:114]` (an allocation, no gloo file)
    lines = [
        "RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: "
        "you tried to allocate 1024 bytes.",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN nothing places it in dist_init
    assert report["phase"] != "dist_init"


def _torchtune_shards(epoch: int, first: int, last: int) -> list[str]:
    """torchtune's checkpointer: a line per shard written, `Model checkpoint of size {GiB:.2f} GiB saved to {path}`."""
    return [
        f"Model checkpoint of size 4.34 GiB saved to /out/epoch_{epoch}/ft-model-{shard:05d}-of-00030.safetensors"
        for shard in range(first, last + 1)
    ]


def test_torchtune_checkpoint_shards_are_the_jobs_work_not_its_end(tmp_path: Path) -> None:
    # GIVEN torchtune's checkpoint lines of one epoch, the last shards not written yet (save_checkpoint runs at the end
    # of every epoch: nothing in them says it is the last one)
    lines = _torchtune_shards(0, 3, 13)
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is in its steps and has not finished
    assert (report["system"], report["phase"], report["verdict"]) == ("torch", "serving", "stalled")


def test_torchtune_final_epoch_checkpoint_is_the_end_of_training(tmp_path: Path) -> None:
    # GIVEN a LoRA run's last epoch: its adapter file, then the checkpointer's non-intermediate branch, `Saving final
    # epoch checkpoint.` and (adapter_only) its note, which says nothing of its own
    lines = [
        "Adapter checkpoint of size 0.01 GiB saved to /out/epoch_2/adapter_model.pt",
        "Saving final epoch checkpoint.",
        "Please note that you have set adapter_only=True, so only adapter weights will be saved.You need to merge the "
        "adapter weights into your base model for further use. See FullModelHFCheckpointer.save_checkpoint for more "
        "details.",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN the job finished, said from the final-epoch line
    assert (code, report["phase"], report["verdict"]) == (0, "serving", "finished")
    assert report["reason"] == "the job finished, as its own end line says: Saving final epoch checkpoint. (line 2)"


def test_torchtune_full_model_saved_line_is_the_end_of_training(tmp_path: Path) -> None:
    # GIVEN the last epoch's shards and the full model's success line (its two sentences joined without a space, as
    # torchtune writes them), the paste cut above `Saving final epoch checkpoint.`
    lines = [
        *_torchtune_shards(2, 29, 30),
        "The full model checkpoint, including all weights and configurations, has been saved successfully."
        "You can now use this checkpoint for further training or inference.",
    ]
    # WHEN analysed
    code, report = _analyze(tmp_path, lines)
    # THEN the job finished
    assert (code, report["phase"], report["verdict"]) == (0, "serving", "finished")


def test_hf_trainer_running_training_in_transformers_explicit_format_starts_the_jobs_loop(tmp_path: Path) -> None:
    # GIVEN transformers' records in its explicit format (utils/logging.py enable_explicit_format:
    # `[LEVEL|file:line] asctime >> message`), the Trainer's `***** Running training *****` last, cut before its stars
    lines = [
        "[INFO|trainer.py:626] 2024-04-29 18:45:03,130 >> Using auto half precision backend",
        "[INFO|trainer.py:2048] 2024-04-29 18:45:03,230 >> ***** Running training",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the training loop started: the job's serving, the log ending in it (line 2), no end line
    assert (report["phase"], report["verdict"]) == ("serving", "stalled"), report["reason"]
    assert report["root_cause"]["line"] == 2


def test_hf_running_evaluation_is_no_start_of_the_training_loop(tmp_path: Path) -> None:
    # GIVEN the Trainer's evaluation banner alone in the same format (trainer.py evaluation_loop)
    lines = ["[INFO|trainer.py:3719] 2024-05-26 11:54:51,665 >> ***** Running Evaluation *****"]
    # WHEN analysed THEN nothing places the job in its loop
    _, report = _analyze(tmp_path, lines)
    assert report["phase"] != "serving", report["reason"]


# axolotl's root format (logging_config.py `simple`) around trl's vllm_client records (extras/vllm_client.py)
AXOLOTL_TRL = "[2025-04-13 20:44:{second:02d},876] [INFO] [trl.extras.vllm_client.check_server:129] [PID:150] "


def test_a_trl_trainer_polling_its_vllm_server_is_still_launching(tmp_path: Path) -> None:
    # GIVEN axolotl's model line (its `[RANK:0]` format), then trl's check_server retrying every 2 s
    lines = [
        "[2025-04-13 20:44:04,527] [INFO] [axolotl.utils.models.load_model:1322] [PID:150] [RANK:0] Converting modules"
        " to torch.bfloat16",
        *(
            AXOLOTL_TRL.format(second=second) + "Server is not up yet. Retrying in 2.0 seconds..."
            for second in range(6, 16, 2)
        ),
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN the job is still at launch, waiting; the cause is the last retry (line 6)
    assert (report["phase"], report["verdict"]) == ("launch", "stalled"), report["reason"]
    assert report["root_cause"]["line"] == 6
    assert report["root_cause"]["text"].endswith("Server is not up yet. Retrying in 2.0 seconds...")


def test_a_trl_trainer_that_gave_up_on_its_vllm_server_timed_out_at_launch(tmp_path: Path) -> None:
    # GIVEN the retries, then check_server's ConnectionError past its total timeout, in a traceback
    lines = [
        AXOLOTL_TRL.format(second=6) + "Server is not up yet. Retrying in 2.0 seconds...",
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.11/site-packages/trl/extras/vllm_client.py", line 119, in check_server',
        "    raise ConnectionError(",
        "ConnectionError: The vLLM server can't be reached at 0.0.0.0:8000 after 240.0 seconds. Make sure the server"
        " is running by running `trl vllm-serve`.",
    ]
    # WHEN analysed
    _, report = _analyze(tmp_path, lines)
    # THEN a timeout at launch, the ConnectionError its cause (line 5)
    assert (report["phase"], report["verdict"]) == ("launch", "timeout"), report["reason"]
    assert report["root_cause"]["line"] == 5
