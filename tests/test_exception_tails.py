"""An exception whose message spans several lines: the cause is the line its further lines follow (their `Tail`), and
only a line at the margin after it can still say how the process ended."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from logphase.logs.matcher import SourceMatcher, Tail
from logphase.logs.reader import Line
from logphase.packs import load_packs
from tests.conftest import run_json


def _analysed(tmp_path: Path, lines: list[str]) -> tuple[str, int]:
    log = tmp_path / "run.log"
    log.write_text("\n".join(lines) + "\n")
    _, report = run_json("analyze", "--post-mortem", str(log))
    return report["verdict"], report["root_cause"]["line"]


# --- torch's RuntimeError ---------------------------------------------------------------------------------------

# c10/cuda/CUDAException.cpp c10_cuda_check_implementation: `CUDA error: <cudaGetErrorString>` then its hints, each on
# a line of its own at the margin
CUDA_ERROR = [
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1194, in _call_impl',
    "    return forward_call(*input, **kwargs)",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]

# torch/nn/modules/module.py load_state_dict: `"Error(s) in loading state_dict for {}:\n\t{}".format(name,
# "\n\t".join(error_msgs))`, each of _load_from_state_dict's messages on a tab-indented line
STATE_DICT_ERROR = [
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", line 2153, in load_state_dict',
    "    raise RuntimeError('Error(s) in loading state_dict for {}:\\n\\t{}'.format(",
    "RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:",
    '\tMissing key(s) in state_dict: "model.norm.weight". ',
    "\tsize mismatch for lm_head.weight: copying a param with shape torch.Size([32000, 4096]) from checkpoint, "
    "the shape in current model is torch.Size([32001, 4096]).",
]


@pytest.mark.parametrize("lines", [CUDA_ERROR, STATE_DICT_ERROR], ids=["cuda-hints-at-the-margin", "tab-indented"])
def test_torchs_runtime_error_line_is_the_cause_over_its_messages_further_lines(
    tmp_path: Path, lines: list[str]
) -> None:
    # GIVEN a traceback ending in torch's RuntimeError whose message goes on below it
    # WHEN analysed post-mortem
    verdict, line = _analysed(tmp_path, lines)
    # THEN a crash whose cause is the `RuntimeError:` line (4), never a further line of its message
    assert (verdict, line) == ("crashed", 4)


# --- NCCL's DistBackendError -------------------------------------------------------------------------------------

# NCCLUtils.hpp: `NCCL error in: <file>:<line>, <ncclGetErrorString>, NCCL version <v>`, then the code's explanation,
# `Last error:` and the text of NCCL's last WARN (reference nccl_torch_vllm.md 2.3(i)), at the margin
DIST_BACKEND_ERROR = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 3665, in barrier',
    "    work = default_pg.barrier(opts=opts)",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
    "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
    "ncclUnhandledCudaError: Call to CUDA function failed.",
    "Last error:",
    "Cuda failure 'initialization error'",
]


def test_the_first_line_of_a_dist_backend_error_is_the_cause_over_its_last_error(tmp_path: Path) -> None:
    # GIVEN the traceback ending in the four lines of the error, NCCL's `Cuda failure '…'` the last
    # WHEN analysed post-mortem
    verdict, line = _analysed(tmp_path, DIST_BACKEND_ERROR)
    # THEN a crash whose cause is the error's first line (4): where, which error, which NCCL
    assert (verdict, line) == ("crashed", 4)


def test_a_dist_backend_error_followed_by_the_shells_abort_is_an_abort_its_first_line_the_cause(
    tmp_path: Path,
) -> None:
    # GIVEN the same error, then the shell's word that the process died of SIGABRT with a core
    lines = [*DIST_BACKEND_ERROR, "Aborted (core dumped)"]
    # WHEN analysed post-mortem
    verdict, line = _analysed(tmp_path, lines)
    # THEN aborted (the shell's line is the process's own end, not its message), the error's first line the cause
    assert (verdict, line) == ("aborted", 4)


# --- vLLM's ValueError under pydantic ----------------------------------------------------------------------------

# vLLM's config dataclasses are pydantic's: a validator's ValueError reaches the log as pydantic-core's display, the
# count and model at the margin, the validator's words indented under it (`  Value error, …`), pydantic's link
VALIDATION_ERROR = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/engine/arg_utils.py", line 1018, in create_engine_config',
    "    model_config = self.create_model_config()",
    '  File "/usr/local/lib/python3.12/dist-packages/pydantic/_internal/_dataclasses.py", line 123, in __init__',
    "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)",
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
    "  Value error, User-specified max_model_len (40960) is greater than the derived max_model_len "
    "(max_position_embeddings=32768 or model_max_length=None in model's config.json). "
    "[type=value_error, input_value=ArgsKwargs((), {}), input_type=ArgsKwargs]",
    "    For further information visit https://errors.pydantic.dev/2.11/v/value_error",
]


def test_the_validators_words_are_the_cause_of_a_validation_error_ending_a_traceback(tmp_path: Path) -> None:
    # GIVEN a traceback ending in pydantic's ValidationError over vLLM's ValueError
    # WHEN analysed post-mortem
    verdict, line = _analysed(tmp_path, VALIDATION_ERROR)
    # THEN a crash whose cause is the validator's words (7), as where the traceback above them is cut: the line
    # above them only counts the errors
    assert (verdict, line) == ("crashed", 7)


# vLLM's loggers print a traceback as one record's message, NewLineFormatter repeating the record's prefix on every
# line (reference nccl_torch_vllm.md, logging_utils/formatter.py); the engine core's output carries its process name
VLLM_PREFIXES = ["ERROR 12-11 10:00:00 [core.py:708] ", "(EngineCore_DP0 pid=7101) "]


@pytest.mark.parametrize("prefix", VLLM_PREFIXES, ids=["logger-record", "engine-core-process"])
def test_the_validators_words_are_the_cause_where_every_line_of_the_traceback_is_prefixed(
    tmp_path: Path, prefix: str
) -> None:
    # GIVEN `EngineCore failed to start.` and its traceback ending in the ValidationError, every line prefixed alike
    lines = [prefix + line for line in ["EngineCore failed to start.", *VALIDATION_ERROR]]
    # WHEN analysed post-mortem
    verdict, line = _analysed(tmp_path, lines)
    # THEN a crash whose cause is the validator's words (8), the prefix no end of the message
    assert (verdict, line) == ("crashed", 8)


# --- a C++ exception and what follows its message -----------------------------------------------------------------

# libstdc++'s verbose terminate handler, then abort(): SIGABRT
TERMINATE = [
    "terminate called after throwing an instance of 'std::runtime_error'",
    "  what():  NCCL Error 5: invalid usage (run with NCCL_DEBUG=WARN for details)",
]
# torch/distributed/elastic/multiprocessing/api.py: the agent's word on a worker that ended, its loggers' form in 2.1
AGENT_FAILED = (
    "[2024-06-12 03:45:51,447] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
    "local_rank: 0 (pid: 10453) of binary: /opt/conda/bin/python"
)


@pytest.mark.parametrize(
    "after", ["Aborted (core dumped)", AGENT_FAILED], ids=["the-shells-abort", "the-agents-exit-code"]
)
def test_a_fatal_line_after_a_what_line_makes_an_abort_whose_cause_is_the_what_line(tmp_path: Path, after: str) -> None:
    # GIVEN a C++ exception's `what():`, then at the margin the shell's or torchrun's word that the process died of
    # SIGABRT
    # WHEN analysed post-mortem
    verdict, line = _analysed(tmp_path, [*TERMINATE, after])
    # THEN aborted, the `what():` line (2) the cause
    assert (verdict, line) == ("aborted", 2)


# --- the mark itself ----------------------------------------------------------------------------------------------

# torch/distributed/launcher/api.py raises ChildFailedError, whose message is the failure table
# (errors/__init__.py _MSG_FORMAT_TEMPLATE, _FAILURE_FORMAT_TEMPLATE): its rows indented
CHILD_FAILED = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 264, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "[1]:",
    "  time      : 2026-09-07_13:03:29",
    "  host      : node-a",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : -15 (pid: 14691)",
    "  error_file: <N/A>",
    "  traceback : Signal 15 (SIGTERM) received by PID 14691",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
]


def _tails(lines: list[str]) -> dict[int, Tail | None]:
    matcher = SourceMatcher(load_packs(), datetime(2026, 12, 1))
    return {e.line: e.tail for n, text in enumerate(lines, 1) for e in matcher.match_line(Line(n, text, 0))}


def test_an_indented_row_is_the_messages_own_text_a_line_at_the_margin_follows_it() -> None:
    # GIVEN ChildFailedError's traceback and its table, a survivor's SIGTERM in an indented row
    # WHEN matched
    tails = _tails(CHILD_FAILED)
    # THEN the exception line is no tail, the survivor's signal row is the message's own text, and the `Root
    # Cause` line at the margin follows the message
    assert (tails[4], tails[15], tails[17]) == (None, Tail.MESSAGE, Tail.FOLLOWING)


def test_the_shells_abort_after_a_what_line_follows_its_message() -> None:
    # GIVEN a C++ exception's `what():` and the shell's `Aborted (core dumped)`
    # WHEN matched
    tails = _tails([*TERMINATE, "Aborted (core dumped)"])
    # THEN the `what():` line is no tail and the shell's line follows it at the margin
    assert (tails[2], tails[3]) == (None, Tail.FOLLOWING)


# --- a stream's tag on every line -------------------------------------------------------------------------------

# torch 2.2+ workers' stderr carries `[rank<R>]: ` on every line (reference nccl_torch_vllm.md 2.1), the traceback
# and the further lines of its exception's message alike: the tag names the writer, not a logger's record
SHM_LAST_ERROR = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 4551, in barrier',
    "    work = group.barrier(opts=opts)",
    "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
    "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
    "Last error:",
    "Error while creating shared memory segment /dev/shm/nccl-LeXlEJ (size 9637888)",
]


def test_under_a_rank_tag_the_lines_after_a_dist_backend_errors_first_line_follow_its_message() -> None:
    # GIVEN torch's NCCL error ending a traceback, every line under rank 1's `[rank1]: ` tag
    lines = [f"[rank1]: {line}" for line in SHM_LAST_ERROR]
    # WHEN matched
    tails = _tails(lines)
    # THEN the error's first line is no tail; the explanation and NCCL's last error follow its message
    assert (tails[4], tails[5], tails[7]) == (None, Tail.FOLLOWING, Tail.FOLLOWING)


def test_under_a_loggers_record_prefix_a_line_at_the_margin_after_the_exception_line_is_a_new_message() -> None:
    # GIVEN the same error logged by vLLM's NewLineFormatter, its record's level and time on every line
    prefix = "ERROR 12-11 10:00:00 [multiproc_executor.py:470] "
    lines = [prefix + line for line in SHM_LAST_ERROR]
    # WHEN matched
    tails = _tails(lines)
    # THEN NCCL's text at the margin in the next record is no further line of the message
    assert tails[7] is None
