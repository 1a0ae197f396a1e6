"""Wrappers nobody listed (a leading part of one shape on every line) and tracebacks whose indentation was lost: the
lines inside read as the system's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.logs.envelope import CONSTANT_NAME
from logphase.logs.reader import sniff_bytes
from logphase.packs import PackSet
from tests.conftest import FIXTURES, judge_text

# vLLM 0.11's API server traceback pasted from its middle, cut after the innermost frame's `raise` (line 16)
CUT_AFTER_RAISE = (FIXTURES / "logs" / "vllm" / "v1-excerpt-cut-after-raise.log").read_text().splitlines()
RAISED = 'raise RuntimeError("Engine core initialization failed'


def gcp(index: int) -> str:
    """GCP Cloud Logging's copied view of a container's entry: severity, the entry's RFC 3339 time (nanoseconds),
    the container named by its resource label (realworld 805)."""
    stamp = f"2025-11-19T20:16:{36 + index // 10:02d}.{96501749 + index:09d}Z"
    return f"INFO {stamp} [resource.labels.containerName: vllm] "


def runner(index: int) -> str:
    """A benchmark runner's `host [stream] ` label before each line a node's process wrote (realworld 810)."""
    return "dinov2-giant-nodes.cn-d004 [stderr] "


def launcher(index: int) -> str:
    """A launcher script's Python logging record around each line of a container it runs: logging's
    `%(asctime)s - %(levelname)s - %(message)s` (asctime `%Y-%m-%d %H:%M:%S,mmm`), the message a `[container] ` label
    and the line (realworld 845). Its start parses as a pack's asctime prefix; the message behind it is hidden all the
    same."""
    return f"2026-05-29 09:14:{index % 60:02d},{594 + index:03d} - INFO - [container] "


@pytest.mark.parametrize("wrapper", [gcp, runner, launcher])
def test_a_leading_part_of_one_shape_is_taken_off_where_the_packs_then_read_the_lines(
    tmp_path: Path, wrapper: object
) -> None:
    # GIVEN the excerpt with a wrapper no listed envelope names before each of its lines
    assert callable(wrapper)
    text = "".join(f"{wrapper(index)}{line}\n" for index, line in enumerate(CUT_AFTER_RAISE))
    # WHEN analysed
    report = judge_text(tmp_path, text)
    # THEN it reads as the excerpt does (docs: vllm/v1-excerpt-cut-after-raise.expected.json), the wrapper named
    assert (report["system"], report["phase"], report["verdict"]) == ("vllm", "launch", "crashed"), report["reason"]
    assert report["root_cause"]["line"] == 16
    assert RAISED in report["root_cause"]["text"]
    assert any(CONSTANT_NAME in note for note in report["notes"])


def test_the_fewest_fields_that_gain_the_most_are_taken(packs: PackSet) -> None:
    # GIVEN GCP's wrapper around vLLM's own prefixed lines (`(APIServer pid=N) ` then vLLM's level and stamp): a
    # longer part of one shape (the wrapper and vLLM's process tag) would read as many lines
    lines = [
        f"{gcp(index)}(APIServer pid=90211) INFO 11-19 12:16:36 [api_server.py:1] vLLM API server version 0.11.0"
        for index in range(8)
    ]
    # WHEN the envelopes are sniffed, the packs' reading asked
    found = sniff_bytes(("\n".join(lines) + "\n").encode(), packs=packs)
    # THEN the one layer is the wrapper: up to its resource label, vLLM's tag left to the pack
    assert [layer.name for layer in found.layers] == [CONSTANT_NAME]
    match = found.layers[0].pattern.match(lines[3])
    assert match is not None and match.group() == gcp(3)


def test_a_logs_own_constant_leading_words_are_left_to_the_packs(tmp_path: Path) -> None:
    # GIVEN a vLLM log whose every line starts alike (`INFO ` and vLLM's stamp): the packs read it as it is
    lines = [f"INFO 11-19 12:16:{30 + n:02d} [api_server.py:1] vLLM API server version 0.11.0" for n in range(6)]
    # WHEN analysed THEN nothing is unwrapped
    report = judge_text(tmp_path, "\n".join(lines) + "\n")
    assert report["system"] == "vllm"
    assert not any(CONSTANT_NAME in note for note in report["notes"])


# vLLM V1's engine core logging a traceback through NewLineFormatter (each line behind the record's prefix), the paste
# cut inside its frames: the engine's init calling the worker's load_model (vllm/v1/worker/gpu_model_runner.py)
ENGINE = "(EngineCore_DP0 pid=270) ERROR 11-19 12:16:36 [core.py:842] "
FRAMES = [
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 83, in __init__',
    "    self.model_executor = executor_class(vllm_config)",
    "                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 230, in load_model',
    "    self.model_runner.load_model(eep_scale_up=eep_scale_up)",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_model_runner.py", line 2500, in load_model',
    "    self.model = model_loader.load_model(",
]


@pytest.mark.parametrize("indent", [True, False])
def test_a_traceback_whose_indentation_was_lost_reads_as_the_indented_one(tmp_path: Path, indent: bool) -> None:
    # GIVEN the engine core's frames, cut at both ends, as logged and as a viewer copied them (each line's leading
    # spaces after the prefix dropped: frames, source lines and carets at the margin; realworld 805)
    text = "".join(f"{ENGINE}{line if indent else line.lstrip()}\n" for line in FRAMES)
    # WHEN analysed
    report = judge_text(tmp_path, text)
    # THEN one traceback cut inside its frames (a crash, read at its innermost frame), in the step that frame proves:
    # the worker's load_model, weight_load
    assert (report["phase"], report["verdict"]) == ("weight_load", "crashed"), report["reason"]
    assert report["root_cause"]["line"] == 6
    assert report["root_cause"]["text"].endswith('gpu_model_runner.py", line 2500, in load_model')


def test_a_message_that_starts_like_a_frame_stays_a_message(tmp_path: Path) -> None:
    # GIVEN a line at the margin that starts `File "` but is no frame (no `line N, in f`), after a vLLM launch line
    text = (
        "INFO 11-19 12:16:30 [api_server.py:1] vLLM API server version 0.11.0\n"
        'File "/models/llama/config.json" not found, using defaults\n'
    )
    # WHEN analysed THEN no traceback is read
    report = judge_text(tmp_path, text)
    assert report["verdict"] != "crashed", report["reason"]


def test_a_leading_part_alone_on_the_wrappers_empty_lines_is_still_the_wrapper(tmp_path: Path) -> None:
    # GIVEN TGI's download and conversion lines (utils/convert.py `Convert: [i/N] -- Took: …`, the launcher's
    # `Successfully downloaded weights.`) behind a pod's name, each followed by an empty line the labeller prefixed too
    # (the name and a space alone: half the lines; realworld 1049's layout)
    messages = [
        "2023-06-02T14:52:26.057868Z  INFO download: text_generation_launcher: Convert: [7/9] -- Took: 0:00:40.570538",
        "2023-06-02T14:53:06.502451Z  INFO download: text_generation_launcher: Convert: [8/9] -- Took: 0:00:40.444298",
        "2023-06-02T14:53:36.778150Z  INFO download: text_generation_launcher: Convert: [9/9] -- Took: 0:00:30.275418",
        "2023-06-02T14:53:37.189304Z  INFO text_generation_launcher: Successfully downloaded weights.",
    ]
    text = "".join(f"podname {message}\npodname \n" for message in messages)
    # WHEN analysed
    report = judge_text(tmp_path, text)
    # THEN the name is the wrapper (on every line, the empty ones too) and TGI's lines read: the download ended, the
    # log ends in weight_load (the shards not started), at the launcher's line (line 7)
    assert (report["system"], report["phase"]) == ("tgi", "weight_load"), report["reason"]
    assert report["root_cause"]["line"] == 7
    assert report["root_cause"]["text"].endswith("Successfully downloaded weights.")
    assert any(CONSTANT_NAME in note for note in report["notes"])
