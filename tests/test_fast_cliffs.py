"""Line kinds that once sent every line of theirs to the matcher (issue 27): the fast path leaves them
unread, and the report is the one every line read gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from logphase import scan as scanning
from logphase.frames import TRIGGER
from logphase.logs.reader import MAX_LINE_BYTES, decoded_text, uncoloured
from logphase.packs import PackSet
from tests.conftest import FIXTURES, Generated
from tests.equivalence import reports

HEAD = scanning.feed.YEAR_LOOKAHEAD


def stamp(index: int) -> str:
    minute, second = divmod(index // 20, 60)
    return f"2026-03-02 09:{minute:02d}:{second:02d}"


def test_untagged_lines_beside_uvicorn_access_lines_are_left_unread(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN an SGLang serving log whose HTTP access lines are uvicorn's inside SGLang's own prefix
    # (`[stamp] INFO:     `, the format SGLang's server logs them in) among its untagged lines
    # (`[stamp] Launch DP1 starting at GPU #4.`, a steady line of no event) and TP0's decode batches
    lines = []
    for index in range(4000):
        at = stamp(index)
        if index % 3 == 0:
            lines.append(f'[{at}] INFO:     10.0.0.{index % 250}:{40000 + index} - "POST /generate HTTP/1.1" 200 OK')
        elif index % 3 == 1:
            lines.append(f"[{at}] Launch DP{index % 2} starting at GPU #{4 * (index % 2)}.")
        else:
            lines.append(
                f"[{at} TP0] Decode batch. #running-req: {index % 40}, #token: {index}, token usage: 0.01, "
                "gen throughput (token/s): 100.00, #queue-req: 0"
            )
    lines.append(f"[{stamp(4000)}] Received sigquit from a child process. It usually means the child failed.")
    log = tmp_path / "sglang.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a tenth of the lines after the head
    # (both templates known: a line is on the longest it starts with)
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - HEAD) * 10 < 4000 - HEAD


def test_empty_lines_are_left_unread_before_any_template_is_known(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a log of a few lines of no known prefix, then 20,000 empty lines, then a CUDA error
    head = [f"worker {index} started" for index in range(HEAD + 10)]
    log = tmp_path / "empty.log"
    error = "RuntimeError: CUDA error: an illegal memory access was encountered"
    log.write_text("\n".join(head) + "\n" * 20_000 + f"\n{error}\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same (the error's line number, the lines counted), and the matcher
    # read the head, the lines of no template, and of the empty ones only those quoted around the error
    assert fast == plain
    stats = captured[-1].stats
    assert stats.lines == log.read_bytes().count(b"\n")
    assert stats.emitted < len(head) + 20


def interleaved_marks(reached: list[str]) -> list[str]:
    """TP0's startup lines `reached`, then 4,000 lines: TP0's two steady marks of two phases
    (`The memory capacity is unbalanced ...`, dist_init; `The following error message ... can be ignored.`,
    weight_load) interleaved with TP1's decode batches."""
    lines = [f"[{stamp(index)} TP0] {text}" for index, text in enumerate(reached)]
    unbalanced = (
        "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
        "min_per_gpu_memory=60.12, local_gpu_memory=78.50, local_gpu_memory * 0.9=70.65"
    )
    note = "The following error message 'operation scheduled before its operands' can be ignored."
    for index in range(4000):
        at = stamp(100 + index)
        if index % 2:
            lines.append(
                f"[{at} TP1] Decode batch. #running-req: {index % 40}, #token: {index}, token usage: 0.01, "
                "gen throughput (token/s): 100.00, #queue-req: 0"
            )
        else:
            lines.append(f"[{at} TP0] {unbalanced if index % 4 else note}")
    return lines


def test_two_steady_marks_of_one_rank_interleaved_do_not_restart_each_other(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN TP0 past its weights (below the CUDA graphs: no draft's phases), then two of its steady
    # marks of two phases interleaved, for 4,000 lines
    log = tmp_path / "marks.log"
    reached = ["Init torch distributed begin.", "Load weight begin. avail mem=78.12 GB"]
    log.write_text("\n".join(interleaved_marks(reached)) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a tenth of the lines after the head:
    # a mark of a phase the rank reached moves nothing, so the other's run stays summarised
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - HEAD) * 10 < 4000 - HEAD


def test_two_steady_marks_of_a_rank_between_the_graphs_and_the_server_are_read_the_same(
    packs: PackSet, tmp_path: Path, scanner: str
) -> None:
    # GIVEN TP0 past its CUDA graphs (its dist_init and weight_load marks are then the draft's, SGLang
    # <=0.5.10), then the same two marks interleaved
    log = tmp_path / "draft.log"
    reached = [
        "Init torch distributed begin.",
        "Load weight begin. avail mem=78.12 GB",
        "Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB",
        "Capture cuda graph end. Time elapsed: 7.23 s. avail mem=0.53 GB. mem usage=0.93 GB.",
    ]
    log.write_text("\n".join(interleaved_marks(reached)) + "\n")
    # WHEN it is analysed with and without the fast path
    # THEN the reports are the same
    assert reports.fast([log], packs) == reports.plain([log], packs)


def numbered_paste(middle: list[str]) -> list[str]:
    """A log copied from a viewer that numbers its lines, each number on a line of its own (as the
    corpus' real-426 torchrun paste is): torchrun's glog warning, 4,000 lines of the training's own
    output of no prefix, `middle`, then the agent's traceback and its error."""
    text = [
        "W0219 12:09:28.313000 140145133409408 torch/distributed/run.py:757] Setting OMP_NUM_THREADS "
        "environment variable for each process to be 1 in default"
    ]
    text += [f"loss {2 + index % 7 / 10:.2f} at step {index}" for index in range(4000)]
    text += middle
    text += [
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ]
    lines = []
    for number, line in enumerate(text, start=1):
        lines += [str(number), line]
    return lines


def test_lines_no_prefix_rule_can_parse_are_left_unread_before_any_template_is_known(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a numbered paste: 8,000 lines of no prefix (numbers, `loss 2.30 at step 12`) around the glog
    # line and the traceback; no line makes a steady event, so no template is ever learned
    log = tmp_path / "numbered.log"
    log.write_text("\n".join(numbered_paste([])) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same (the error, its traceback, the lines quoted around it), and the
    # matcher read under a tenth of the lines after the head: a line starting with a digit or `l` is a
    # prefix's only if it holds what every such prefix needs (`-`, ` - lmdeploy`, `NCCL INFO ` ...)
    assert fast == plain
    stats = captured[-1].stats
    assert stats.lines == 2 * 4005
    assert (stats.emitted - HEAD) * 10 < 2 * 4005 - HEAD


def test_a_line_a_prefix_rule_may_parse_is_read_among_lines_of_no_prefix(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN the numbered paste with, late in it, a line in Python's logging format (`asctime - name -
    # level - message`, a prefix rule's) holding no rule's literal, stamped 21 minutes after the glog
    # line (whose year is the one before the analysis date's)
    log = tmp_path / "numbered.log"
    log.write_text("\n".join(numbered_paste(["2029-02-19 12:30:00,000 - train - INFO - epoch 3 done"])) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same: the stamped line was read (its time is the error's)
    assert fast == plain
    assert '"time": "2029-02-19 12:30:00"' in plain


ALLREDUCE = (
    "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. "
    "To silence this warning, specify disable_custom_all_reduce=True explicitly."
)
SERVER_ARGS = "server_args=ServerArgs(model_path='/models/QwQ-32B', tp_size=4, port=30000)"


def allreduce_log(relaunch_at: int | None) -> list[str]:
    """SGLang's server args, then 4,000 lines: TP0-TP3 each warning that custom allreduce is disabled
    (SGLang's dist_init mark; its text holds vLLM's mark of the same words, a rule gated on vLLM's
    prefixes) among TP0's decode batches; the server args again at `relaunch_at` (a second start)."""
    lines = [f"[{stamp(0)}] {SERVER_ARGS}"]
    for index in range(4000):
        at = stamp(1 + index)
        if index == relaunch_at:
            lines.append(f"[{at}] {SERVER_ARGS}")
        elif index % 2:
            lines.append(
                f"[{at} TP0] Decode batch. #running-req: {index % 40}, #token: {index}, token usage: 0.01, "
                "gen throughput (token/s): 100.00, #queue-req: 0"
            )
        else:
            lines.append(f"[{at} TP{index // 2 % 4}] {ALLREDUCE}")
    return lines


def test_a_factor_of_a_rule_gated_on_another_systems_prefixes_leaves_its_lines_unread(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN SGLang's ranks warning that custom allreduce is disabled, 2,000 times among decode batches
    log = tmp_path / "allreduce.log"
    log.write_text("\n".join(allreduce_log(None)) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a tenth of the lines after the head:
    # vLLM's mark (gated on vLLM's prefixes) is no line's on SGLang's templates
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - HEAD) * 10 < 4001 - HEAD


# vLLM's engine arguments as its start prints them (`non-default args: {...}`, longer than a paste's columns)
VLLM_ARGS = (
    ("tensor_parallel_size", 2),
    ("gpu_memory_utilization", 0.9),
    ("max_model_len", 32768),
    ("max_num_seqs", 256),
    ("enable_prefix_caching", True),
    ("served_model_name", ["qwen3"]),
    ("port", 8000),
)


def vllm_serving_with(line: str) -> list[str]:
    """The engine arguments, 4,000 lines of a vLLM serving log (vLLM's logger: `LEVEL MM-DD HH:MM:SS [file.py:line]
    message`), the API server's throughput lines and `line` (its `{at}` the stamp) in turn, then an engine error."""
    args = ", ".join(f"'{key}': {value}" for key, value in (("model", "'Qwen/Qwen3-8B'"), *VLLM_ARGS))
    lines = [f"(APIServer pid=41190) INFO 03-02 09:00:00 [utils.py:326] non-default args: {{{args}}}"]
    for index in range(4000):
        minute, second = divmod(index // 20, 60)
        at = f"03-02 09:{minute:02d}:{second:02d}"
        if index % 2:
            lines.append(
                f"(APIServer pid=41190) INFO {at} [loggers.py:123] Engine 000: Avg prompt throughput: "
                f"{index * 37 % 9000 / 10:.1f} tokens/s, Avg generation throughput: {index % 700 / 10:.1f} tokens/s, "
                f"Running: {index % 37} reqs, Waiting: {index % 3} reqs, GPU KV cache usage: {index % 100 / 10:.1f}%, "
                "Prefix cache hit rate: 0.0%"
            )
        else:
            lines.append(line.format(at=at))
    lines.append("(APIServer pid=41190) ERROR 03-02 09:04:00 [core.py:291] EngineCore encountered a fatal error.")
    return lines


@pytest.mark.parametrize(
    "line",
    [
        # a file whose `[[module]]` entry takes any message: its lines are marks of its phase (compile), a steady run
        "INFO {at} [backends.py:546] vLLM's torch.compile cache is disabled.",
        # (vLLM 0.7.3's `EngineCore hit an exception: %s` [core.py:291] stood here as a line no candidate rule could
        # match; it is the engine core's own failure, read by vllm.engine.hit_exception. A candidate literal whose
        # rule's regex fails is test_a_line_naming_a_thread_that_opens_no_dump_is_left_unread's case.)
    ],
)
def test_lines_a_module_places_or_no_candidate_rule_can_match_are_summarised(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any], line: str
) -> None:
    # GIVEN a vLLM serving log where every other line is `line` (its text as vLLM's source logs it)
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(vllm_serving_with(line)) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a tenth of the lines after the head
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - HEAD) * 10 < 4002 - HEAD


def test_a_line_naming_a_thread_that_opens_no_dump_is_left_unread(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN an SGLang log whose every other line says a watchdog thread crashed (SGLang's watchdog.py:
    # `%s watchdog thread crashed: %s`; it holds TGI's candidate ` crashed`, a rule gated on TGI's prefixes,
    # and `thread `, which no stack dump's header is) among TP0's decode batches
    lines = []
    for index in range(4000):
        at = stamp(index)
        if index % 2:
            lines.append(
                f"[{at} TP0] Decode batch. #running-req: {index % 40}, #token: {index}, token usage: 0.01, "
                "gen throughput (token/s): 100.00, #queue-req: 0"
            )
        else:
            lines.append(f"[{at} TP0] Scheduler watchdog thread crashed: RuntimeError('x')")
    log = tmp_path / "watchdog.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a tenth of the lines after the head
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - HEAD) * 10 < 4000 - HEAD


def test_a_line_a_steady_marks_lookahead_refuses_is_left_unread(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN an SGLang log whose every other line says some feature is disabled because of something (SGLang's
    # server_args.py: `CUDA graph is disabled because --enable-mis is set.`): it holds the factor of SGLang's
    # custom allreduce mark (` is disabled because`), whose regex needs `Custom allreduce`, `Custom all-reduce`
    # or a word with `Allreduce`/`AllReduce` (a lookahead) before it
    lines = []
    for index in range(4000):
        at = stamp(index)
        if index % 2:
            lines.append(
                f"[{at} TP0] Decode batch. #running-req: {index % 40}, #token: {index}, token usage: 0.01, "
                "gen throughput (token/s): 100.00, #queue-req: 0"
            )
        else:
            lines.append(f"[{at} TP0] CUDA graph is disabled because --enable-mis is set.")
    log = tmp_path / "disabled.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a tenth of the lines after the head
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - HEAD) * 10 < 4000 - HEAD


def decode_batch(index: int) -> str:
    return (
        f"[{stamp(index)} TP0] Decode batch. #running-req: {index % 40}, #token: {index * 7919 % 100003}, token usage: "
        f"0.01, gen throughput (token/s): {index * 37 % 100000 / 10:.2f}, #queue-req: {index * 13 % 1000}"
    )


def prefill_run_with_mixed_batches(count: int, loads: bool = True) -> str:
    """Decode batches; every 40th line a prefill batch (the prefill mark's steady run), two in 20 a mixed prefill
    batch (no rule's), every 20th TP0's `Load weight begin.` (a candidate) where `loads`."""
    lines = []
    for index in range(count):
        if index % 40 == 0:
            lines.append(
                f"[{stamp(index)} TP0] Prefill batch. #new-seq: 1, #new-token: {index % 50}, #cached-token: 0, "
                "token usage: 0.00, #running-req: 0, #queue-req: 0, "
            )
        elif index % 20 in (9, 18):
            lines.append(mixed_prefill(index))
        elif index % 20 == 19 and loads:
            lines.append(f"[{stamp(index)} TP0] Load weight begin. avail mem=70.00 GB")
        else:
            lines.append(decode_batch(index))
    return "\n".join(lines) + "\n"


def mixed_prefill(index: int) -> str:
    """SGLang's scheduler (tp_worker.py, 0.2.15-0.3.0): every string `^Prefill batch[.,] … #new-seq: ` needs."""
    return (
        f"[{stamp(index)} TP0] Prefill batch(mixed #running-req: {index % 7}). #new-seq: 1, #new-token: 9, "
        f"#cached-token: 0, cache hit rate: 0.00%, #queue-req: {index % 3}"
    )


# tqdm's default format (`{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining},
# {rate_fmt}]`) of SGLang's bar no rule reads (scheduler_pp_mixin.py, 0.5.10: `Profiling prefill latency for
# dynamic chunking`)
BAR = (
    "Profiling prefill latency for dynamic chunking: {percent:3d}%|{bar}| {done}/{total} "
    "[00:{done:02d}<00:04, {rate:5.2f}it/s]"
)


def bar(index: int) -> str:
    total = 16 << index % 7
    done = index % (total + 1)
    rate = 1 + index % 997 / 10
    return BAR.format(
        percent=done * 100 // total, bar=("█" * (done * 10 // total)).ljust(10), done=done, total=total, rate=rate
    )


@pytest.mark.parametrize(
    "other",
    [
        # a tqdm bar no rule reads: it holds `%|`, the candidate of the bar rules (torch's loop and epoch bars need
        # their words, SGLang's unnamed bar a percentage at the message's start)
        bar,
        # SGLang's mixed prefill batch: it holds every string the prefill mark needs, and fails right after its literal
        mixed_prefill,
    ],
    ids=["tqdm-bar", "prefill-mixed"],
)
def test_lines_no_rule_can_match_after_their_prefix_are_summarised(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any], other: Any
) -> None:
    # GIVEN an SGLang log where every fourth line is `other` among TP0's decode batches
    lines = [decode_batch(index) if index % 4 else other(index) for index in range(4000)]
    log = tmp_path / "other.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the matcher read under a tenth of the lines after the head
    assert fast == plain
    stats = captured[-1].stats
    assert (stats.emitted - HEAD) * 10 < 4000 - HEAD


def test_a_steady_runs_walk_checks_an_anchored_rule_by_its_regex(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN an SGLang log of decode batches where every 40th line is a prefill batch (the prefill mark's steady
    # run), two in 20 a mixed prefill batch (no rule's: `Prefill batch(` fails the mark's `^Prefill batch[.,]`)
    # and every 20th TP0's `Load weight begin.` (a candidate: each is read, with what the runs' walks look for)
    log = tmp_path / "mixed.log"
    log.write_text(prefill_run_with_mixed_batches(4000))
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and the walk for the prefill run's last line probed no mixed line it left
    # unread (each line it probes is one the matcher reads: their events are remembered, one probe each)
    assert fast == plain
    stats = captured[-1].stats
    assert stats.probed <= stats.emitted


@pytest.mark.slow
def test_a_bar_glued_to_the_next_log_line_is_read(
    packs: PackSet, tmp_path: Path, scanner: str, captured: list[Any]
) -> None:
    # GIVEN the same log of bars and decode batches, where the bar without its final newline is glued to SGLang's
    # ready line (`The server is fired up and ready to roll!`), the reader's two lines
    lines = [decode_batch(index) if index % 4 else bar(index) for index in range(4000)]
    lines[2000] = bar(2000) + f"[{stamp(2000)}] The server is fired up and ready to roll!"
    log = tmp_path / "glued.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, and say the server ready
    assert fast == plain
    assert json.loads(fast)["verdict"] == "ready"


@pytest.mark.parametrize(
    "header",
    [
        'Thread 1234 (idle): "MainThread"',  # py-spy dump
        "Thread 0x00007f3a2b4c5740 (most recent call first):",  # faulthandler
        "Current thread 0x00007f3a2b4c5740 (most recent call first):",  # faulthandler, the thread that faulted
        "Traceback for thread 1234 (python) [Has the GIL] (most recent call last):",  # pystack
        "Process 1234: python -m sglang.launch_server --model-path x",  # py-spy dump
    ],
)
def test_each_stack_dump_header_is_a_trigger(header: str) -> None:
    # GIVEN a stack dump's header line as its printer writes it
    # WHEN the dump trigger is searched in it, and in the same line's words said of a thread or process
    # THEN the header is a trigger, and neither `… watchdog thread crashed` nor `Process 2 using …` is
    assert TRIGGER.search(header) is not None
    assert TRIGGER.search("[2026-03-02 09:00:00 TP0] Scheduler watchdog thread crashed: x") is None
    assert TRIGGER.search("[2026-03-02 09:00:00 TP0] [CI Download] Process 2 using lock file: /tmp/x") is None


def test_the_runs_start_again_where_the_server_starts_again(packs: PackSet, tmp_path: Path, scanner: str) -> None:
    # GIVEN the same log with SGLang's server args again after 3,000 lines: a second start
    log = tmp_path / "relaunch.log"
    log.write_text("\n".join(allreduce_log(3000)) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same: each rank's dist_init of the second start begins at its first
    # warning after the second server args (line 3004: TP1, the first after them)
    assert fast == plain
    assert '"start_line": 3004' in plain


def test_the_lines_before_a_steady_runs_last_line_are_quoted_as_the_plain_path_quotes_them(
    packs: PackSet, tmp_path: Path, scanner: str
) -> None:
    # GIVEN two ranks' NCCL channel setup interleaved for 3,000 lines (NCCL's `host:pid:tid [dev] NCCL INFO` form),
    # then rank 1's last two lines alone and a line cut by the paste: the stall's cause is rank 1's last channel
    # line, and the lines the report quotes before it are rank 2's last and rank 1's own
    lines = []
    for index in range(1500):
        lines.append(f"a100-5:154783:154783 [1] NCCL INFO Channel {index % 32:02d}/0 : 1[1] -> 0[0] via P2P/IPC/read")
        lines.append(f"a100-5:154784:154784 [2] NCCL INFO Channel {index % 32:02d}/0 : 2[2] -> 1[1] via P2P/IPC/read")
    lines += [
        "a100-5:154783:154783 [1] NCCL INFO Channel 12/0 : 1[1] -> 0[0] via P2P/IPC/read",
        "a100-5:154783:154783 [1] NCCL INFO Channel 13/0 : 1[1] -> 0[0] via P2P/IPC/read",
        "a100-5:154783:154",
    ]
    log = tmp_path / "channels.log"
    log.write_text("\n".join(lines) + "\n")
    # WHEN it is analysed with and without the fast path
    plain, fast = reports.plain([log], packs), reports.fast([log], packs)
    # THEN the reports are the same, the context before the cause included (rank 2's last line, 3,000)
    assert fast == plain
    assert '"line": 3000' in plain


# How terminals show these logs (`docker logs` of a TTY, a server started in one): vLLM's ColoredFormatter
# (fixtures/logs/vllm/v1-ansi-color-ready.log: the process tag bold cyan ending `[0;0m`, the level in its
# colour, `[file:line]` grey), uvicorn's coloured level (`[32mINFO[0m:`), a reset opening the line.
TAG = re.compile(rb"^\(\w[\w-]* pid=\d+\) ")
LEVEL = re.compile(rb"\b(INFO|WARNING|ERROR|DEBUG)\b")
WHERE = re.compile(rb"\[[\w.]+\.py:\d+\]")


def in_colour(data: bytes) -> bytes:
    """Each line of `data` as a terminal shows it: its text the same once the escapes are gone."""
    lines = []
    for line in data.split(b"\n"):
        if not line.strip():
            lines.append(line)
            continue
        tag = TAG.match(line)
        head = b"\x1b[1;36m" + tag.group()[:-1] + b"\x1b[0;0m " if tag else b"\x1b[0m"
        line = line[tag.end() :] if tag else line
        line = LEVEL.sub(lambda found: b"\x1b[32m" + found.group() + b"\x1b[0m", line, count=1)
        lines.append(head + WHERE.sub(lambda found: b"\x1b[90m" + found.group() + b"\x1b[0m", line, count=1))
    return b"\n".join(lines)


def same_run(plain: Path, coloured: Path, packs: PackSet) -> list[dict[str, Any]]:
    """Both logs' reports by both paths, each file's folder written out of them, and the inputs' sizes
    (the colour codes' bytes: the only thing they add)."""
    named = [(plain, reports.plain), (plain, reports.fast), (coloured, reports.plain), (coloured, reports.fast)]
    made = []
    for path, analysed in named:
        report = json.loads(analysed([path], packs).replace(str(path.parent), "FOLDER"))
        for summary in report["inputs"]:
            summary.pop("bytes")
        made.append(report)
    return made


@pytest.mark.parametrize(
    "name",
    [
        "vllm/v1-085-tp4-ready-serving.log",
        "vllm/v1-shm-broadcast-hung-serving.log",
        "sglang/capture-oom-tp3-sigquit-cascade.log",
        "lmdeploy/turbomind-tp2-ready-serving.log",
    ],
)
def test_a_log_in_terminal_colours_reads_as_the_log_without_them(
    name: str, packs: PackSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scanner: str
) -> None:
    # GIVEN a fixture log, and the same log with a terminal's colour codes on every line, read past
    # their first line by the fast path
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 1)
    plain, coloured = tmp_path / "plain" / "server.log", tmp_path / "coloured" / "server.log"
    for path, data in ((plain, (FIXTURES / "logs" / name).read_bytes()), (coloured, b"")):
        path.parent.mkdir()
        path.write_bytes(data or in_colour(plain.read_bytes()))
    assert all(b"\x1b" in line for line in coloured.read_bytes().split(b"\n") if line.strip())
    # WHEN each is analysed with and without the fast path
    # THEN the four reports are the same
    first, *others = same_run(plain, coloured, packs)
    assert others == [first] * 3


@pytest.mark.slow
def test_colour_codes_on_every_line_leave_the_fast_path_as_fast(
    packs: PackSet, tmp_path: Path, generated: Generated, scanner: str, captured: list[Any]
) -> None:
    # GIVEN a vLLM serving log of 1 MB (generated), and the same log in a terminal's colours
    [log] = generated("vllm-v1", 1_000_000, 27)
    plain, coloured = tmp_path / "plain" / "server.log", tmp_path / "coloured" / "server.log"
    for path, data in ((plain, log.read_bytes()), (coloured, in_colour(log.read_bytes()))):
        path.parent.mkdir()
        path.write_bytes(data)
    # WHEN both are analysed with and without the fast path
    reports_of = same_run(plain, coloured, packs)
    plain_fast, coloured_fast = (lines.stats for lines in captured)
    # THEN the reports are the same, and the fast path read the coloured log's lines as it read the
    # plain log's: the same lines to the matcher, under a tenth of those past the head (every line, before)
    assert list(reports_of[1:]) == [reports_of[0]] * 3
    assert coloured_fast.lines == plain_fast.lines
    assert coloured_fast.emitted == plain_fast.emitted
    assert (coloured_fast.emitted - HEAD) * 10 < coloured_fast.lines - HEAD


# Pieces of lines: text, non-ASCII (whole and broken UTF-8), colour codes (CSI, OSC, two-byte escapes and
# ones cut short), the remnant `[0m`, escapes written out (whole and cut), carriage returns
PIECES = [
    b"INFO ",
    b"load ",
    b"\xc3\xa9",
    b"\xe2\x82",
    b"\xac",
    b"\xff",
    b"\x1b[32m",
    b"\x1b[0;0m",
    b"\x1b[1;2",
    b"\x1b]0;title\x07",
    b"\x1b]8;;url\x1b\\",
    b"\x1b]2;open",
    b"\x1bM",
    b"\x1b",
    b"[0m",
    b"#033[1;36m",
    b"^[[0;0m",
    b"\\u001b[0m",
    b"^[",
    b"#033",
    b"\r",
    b"m",
    b"]",
]


@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=12), min_size=1, max_size=8))
def test_uncoloured_bytes_read_as_the_reader_reads_each_line(lines: list[list[bytes]]) -> None:
    # GIVEN lines of text, non-ASCII bytes and escapes
    data = b"\n".join(b"".join(pieces) for pieces in lines) + b"\n"
    # WHEN their colour codes are removed from the bytes of them all at once
    plain = uncoloured(data)
    # THEN where that was done, each line reads as the reader reads its own bytes, on the same line
    if plain is not None:
        assert plain.count(b"\n") == data.count(b"\n")
        assert [decoded_text(line) for line in plain.split(b"\n")] == [decoded_text(line) for line in data.split(b"\n")]


def test_the_colour_codes_of_a_terminal_are_removed() -> None:
    # GIVEN lines as vLLM's ColoredFormatter writes them, one with non-ASCII text after its codes
    data = (FIXTURES / "logs" / "vllm" / "v1-ansi-color-ready.log").read_bytes()[:4096]
    data = data[: data.rindex(b"\n") + 1] + "\x1b[32mINFO\x1b[0m modèle chargé\n".encode()
    # WHEN their colour codes are removed THEN none is left, and no line moved
    plain = uncoloured(data)
    assert plain is not None
    assert b"\x1b" not in plain
    assert plain.count(b"\n") == data.count(b"\n")


def test_a_line_longer_than_the_reader_keeps_stays_as_it_is() -> None:
    # GIVEN a coloured line longer than the reader keeps of a line (its codes count in what it keeps)
    data = b"\x1b[32mINFO\x1b[0m " + b"x" * MAX_LINE_BYTES + b"\n\x1b[32mINFO\x1b[0m ready\n"
    # WHEN its colour codes would be removed THEN the bytes are read as they are
    assert uncoloured(data) is None
