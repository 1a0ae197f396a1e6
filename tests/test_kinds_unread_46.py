"""Logs no line of which was read, each kind written from its format's source: tqdm's default bar of any
description (tqdm std.py format_meter), nanoGPT's iteration and evaluation prints (train.py), the
`[LEVEL] asctime module: ` layout torchelastic's launcher logs through, and vLLM's placement-group wait whose
paste abridged its specs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logphase.logs.envelope import READ_MESSAGE
from logphase.logs.reader import packs_reading
from logphase.packs import load_packs
from tests.conftest import judge_text, root_text


def _bar(desc: str, done: int, total: int, *, unit: str = "it", postfix: str = "") -> str:
    """A tqdm bar as format_meter draws it: `{desc}: {pct:3.0f}%|{bar}| {n}/{total} [{elapsed}<{remaining},
    {rate}{postfix}]` (an empty description draws no `: `), a 10-cell bar."""
    pct = 100 * done // total
    cells = "█" * (pct // 10) + " " * (10 - pct // 10)
    head = f"{desc}: " if desc else ""
    extra = f", {postfix}" if postfix else ""
    return f"{head}{pct:3d}%|{cells}| {done}/{total} [00:0{done % 10}<00:0{(total - done) % 10},  3.21{unit}/s{extra}]"


def test_a_converter_whose_bars_name_each_tensor_is_open_at_its_last_tick(tmp_path: Path) -> None:
    # GIVEN a model converter's bar whose description is the tensor it converts (no rule names it), the paste cut
    text = (
        "2024-07-06 17:50:21,858 - lmdeploy - INFO - Using turbomind engine\n"
        + "".join(
            _bar(f"llm.model.layers.0.{name}.weight", i, 32, unit="w", postfix="dev=cpu") + "\n"
            for i, name in enumerate(["input_layernorm", "mlp.down_proj", "mlp.gate_proj"], start=1)
        )
        + "llm.model.laye"
    )
    # WHEN judged post-mortem
    report = judge_text(tmp_path, text)
    # THEN the run went on until the bar's last tick: open, and that tick is where it stopped
    assert report["verdict"] in ("stalled", "progressing")
    assert report["root_cause"]["line"] == 4
    assert "| 3/32 [" in root_text(report)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    desc=st.sampled_from(["", "Map (num_proc=8)", "eval", "Processing requests", "shard 3", "100 files"]),
    done=st.integers(min_value=0, max_value=99),
)
def test_any_description_of_a_bar_short_of_its_total_reads_as_the_open_logs_last_step(
    tmp_path: Path, desc: str, done: int
) -> None:
    # GIVEN a bare bar of any description that has not reached its total, alone
    line = _bar(desc, done, 100)
    # WHEN judged THEN it is an open log whose last step is that bar, never a verdict the bar cannot carry
    report = judge_text(tmp_path, line + "\n")
    assert report["verdict"] in ("stalled", "progressing")
    assert root_text(report) == line


@pytest.mark.parametrize(
    "line",
    [
        "Map:  57% 4/7 [00:40<00:29,  9.96s/it]",  # the bar's `|…|` lost: not tqdm's whole format
        "50%|█████",
        "Progress: 50% done (4/8)",
    ],
)
def test_text_short_of_tqdms_whole_format_is_no_bar(tmp_path: Path, line: str) -> None:
    # GIVEN a line that holds a percentage but not tqdm's `| n/total [elapsed<remaining, ` WHEN judged
    report = judge_text(tmp_path, line + "\n")
    # THEN nothing was read: unknown
    assert report["verdict"] == "unknown"


def test_a_bar_does_not_displace_a_named_steps_phase(tmp_path: Path) -> None:
    # GIVEN a torchrun job's training steps (HF Trainer's logged dicts), then an unnamed bar (an eval loop's)
    text = "{'loss': 2.1034, 'grad_norm': 1.4375, 'learning_rate': 4.9e-05, 'epoch': 0.02}\n" + _bar("", 7, 50) + "\n"
    # WHEN judged THEN the job is in its steps, as the Trainer's line says
    report = judge_text(tmp_path, text)
    assert report["phase"] == "serving"


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


@pytest.mark.parametrize(
    ("line", "depth"),
    [
        # a rule that names the bar's words (transformers' `Loading checkpoint shards`): the message is known
        ("Loading checkpoint shards: 100%|██████████| 4/4 [00:12<00:00,  3.02s/it]", READ_MESSAGE),
        # tqdm's shape alone, of a description no rule names: read, but no sign the packs know what it says
        ("shard 3: 100%|██████████| 8/8 [00:02<00:00,  3.51it/s]", 0),
        ("Map (num_proc=8):  42%|████▏     | 4.20k/10.0k [00:03<00:04, 1.31k examples/s]", 0),
    ],
)
def test_a_bar_of_any_words_tells_the_envelope_sniff_nothing_of_its_message(line: str, depth: int) -> None:
    # GIVEN a bar line WHEN the envelope sniff asks how deep the shipped packs read it
    # THEN only a rule that knows its words says its message is read (a label that takes them off is then seen)
    assert packs_reading(load_packs(check_examples=False), line) == depth
