"""Pastes whose newlines were lost (issue 25, kind G's mechanism): a terminal's copy that padded each line to its width
and joined them, a form that collapsed a paste's line ends, a bar glued to the next record. A record start in the middle
of a line (a known stamp or level prefix after a run of spaces, a frame, a traceback header) splits it into records,
each read as its own line was; a line that only holds such words stays whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from logphase.logs.envelope import Unwrapped
from logphase.logs.reader import line_updates
from tests.conftest import judge_text, root_text

WIDTH = 132  # a terminal's width the lines were padded to


def _collapsed(lines: list[str], width: int = WIDTH) -> str:
    """The lines as a terminal copy that lost its newlines shows them: each padded with spaces to the width."""
    return "".join(line.ljust(width) if len(line) < width else line + "  " for line in lines).rstrip() + "\n"


def _judge(tmp_path: Path, text: str) -> dict[str, Any]:
    return judge_text(tmp_path, text, "paste.log")


# torchrun's agent through logging.basicConfig (BASIC_FORMAT `%(levelname)s:%(name)s:%(message)s`), as torch 1.x-2.0
# elastic prints it (multiprocessing/api.py `_close`, `_poll`), then its own traceback (CPython's format)
AGENT = [
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 70211 closing signal SIGTERM",
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 70213 closing signal SIGTERM",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -11) local_rank: 1 (pid: 70212) of binary: "
    "/opt/conda/bin/python",
    "Traceback (most recent call last):",
    '  File "/opt/conda/bin/torchrun", line 33, in <module>',
    "    sys.exit(load_entry_point('torch==2.0.1', 'console_scripts', 'torchrun')())",
]


def test_records_of_a_collapsed_paste_are_read_one_by_one(tmp_path: Path) -> None:
    # GIVEN torchrun's agent lines that lost their newlines: one physical line, each record padded to the terminal
    report = _judge(tmp_path, _collapsed(AGENT))
    # THEN the worker's death is read from its own record: aborted by signal 11, that record the cause
    assert report["verdict"] == "aborted"
    assert root_text(report) == AGENT[2]


def test_a_vllm_start_collapsed_on_one_line_keeps_its_steps(tmp_path: Path) -> None:
    # GIVEN vLLM 0.8's records (`%(levelname)s %(asctime)s [%(filename)s:%(lineno)d] %(message)s`) on one line
    lines = [
        "INFO 02-11 10:25:20 [api_server.py:1043] vLLM API server version 0.8.5",
        "INFO 02-11 10:25:22 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: model='m'",
        "INFO 02-11 10:25:30 [gpu_model_runner.py:1329] Starting to load model m...",
    ]
    report = _judge(tmp_path, _collapsed(lines))
    # THEN the steps are read in order: the log ends while the weights load
    assert (report["verdict"], report["phase"]) == ("stalled", "weight_load")
    assert root_text(report) == lines[2]


def test_a_bar_that_lost_its_bar_glued_to_the_agents_record_is_two_records(tmp_path: Path) -> None:
    # GIVEN transformers' `Loading checkpoint shards` tqdm bar whose `|{bar}|` a markdown paste took out, glued (no
    # newline after a bar's last redraw) to the agent's record of a worker killed by signal 9
    text = (
        "Loading checkpoint shards:  33% 1/3 [00:21<00:42, 21.02s/it]ERROR:torch.distributed.elastic.multiprocessing."
        "api:failed (exitcode: -9) local_rank: 0 (pid: 5120) of binary: /usr/bin/python3\n"
    )
    report = _judge(tmp_path, text)
    # THEN the weights were loading and the agent's record is the cause on its own
    assert report["phase"] == "weight_load"
    assert root_text(report).startswith("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9)")


def test_a_frame_split_from_a_collapsed_traceback_keeps_its_indentation() -> None:
    # GIVEN a collapsed traceback after the agent's record: its header, a frame padded after it
    text = _collapsed(AGENT[2:5])
    # WHEN split into the lines logphase reads
    parts = [line.text.rstrip() for line in line_updates(Unwrapped(1, text.rstrip("\n")), 0)]
    # THEN each is the line it was, the frame indented as CPython printed it, all on physical line 1
    assert parts == AGENT[2:5]


def test_a_frame_behind_a_loggers_prefix_stays_its_line() -> None:
    # GIVEN vLLM's traceback line (a prefix, then the frame as CPython indents it): one record, however long
    text = (
        "(EngineCore_DP0 pid=4410) ERROR 11-18 14:16:34 [core.py:708]   File "
        '"/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line 509, in wait_for_ready'
    )
    # WHEN split
    parts = [line.text for line in line_updates(Unwrapped(1, text), 0)]
    # THEN it is one line
    assert parts == [text]


def test_two_frames_on_one_line_are_two_records() -> None:
    # GIVEN a faulthandler dump's frames (`line N in f`, no comma) that lost their newline, padded
    frames = [
        '  File "/usr/lib/python3.10/threading.py", line 320 in wait',
        '  File "/usr/lib/python3.10/threading.py", line 607 in wait',
    ]
    text = _collapsed(frames).rstrip("\n")
    # WHEN split
    parts = [line.text.rstrip() for line in line_updates(Unwrapped(1, text), 0)]
    # THEN each frame is its own line, indented as faulthandler writes it
    assert parts == frames


def test_a_long_line_that_only_mentions_a_level_stays_whole() -> None:
    # GIVEN a long record whose message holds spaces and words like a level, but no record start after a space run
    text = (
        "INFO 02-11 10:25:22 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: model='m', "
        "speculative_config=None,  tokenizer='m',  skip_tokenizer_init=False, log level INFO: quiet, "
        "ERROR handling default, tokenizer_mode=auto"
    )
    # WHEN split
    parts = [line.text for line in line_updates(Unwrapped(1, text), 0)]
    # THEN it is one line
    assert parts == [text]


def test_watch_reads_a_collapsed_paste_as_analyze_does(tmp_path: Path) -> None:
    # GIVEN the collapsed agent paste, followed as a stream
    from logphase.logs.follow import _LineSplitter

    data = _collapsed(AGENT).encode()
    splitter = _LineSplitter()
    streamed = [line.text for line in splitter.feed(data) + splitter.settle()]
    # THEN the stream yields the records the file reader yields
    read = [line.text for line in line_updates(Unwrapped(1, data.decode().rstrip("\n")), 0)]
    assert streamed == read
    assert len(read) == len(AGENT) - 1  # the frame's source line stays glued to its frame (no record start)


def test_watch_takes_lost_escape_colour_codes_off_as_analyze_does() -> None:
    # GIVEN a line whose colour codes lost their ESC byte (`[36m…[0m`, a terminal's output pasted), then a plain one
    from logphase.logs.follow import _LineSplitter
    from logphase.logs.reader import decoded_text

    raw = b" [36m(RayWorkerVllm pid=5085) [0m [E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught\nnext line\n"
    splitter = _LineSplitter()
    streamed = [line.text for line in splitter.feed(raw) + splitter.settle()]
    # THEN the stream reads them as the file reader does: the codes taken off
    assert streamed == [decoded_text(part) for part in raw.split(b"\n")[:-1]]
