"""A paste wrapped at word boundaries (a web text box's soft wrap copied as it shows, an author's wrap): every line
cut at a space within a fixed width, its rest at the margin, unindented. The reader joins the pieces back, so the log
reads as the unwrapped one (metamorphic: wrapping at spaces at any width changes no answer), and a log whose own
lines merely end short of its longest is left as it is."""

from __future__ import annotations

import io
import random
import tempfile
import zlib
from pathlib import Path

import pytest

from logphase.logs.envelope import Unwrapper, sniff
from logphase.logs.reader import LogSource, read_lines
from tests.conftest import judge_text, root_text
from tests.paste.harness import FIXTURE_LOGS, judge, judge_plain, plain_lines
from tests.paste.wrappers import word_wrap, word_wrap_line

# vLLM's multiproc executor logs a worker's traceback line by line under its own prefix (vllm/v1/executor/
# multiproc_executor.py: `logger.exception`, each line `(Worker pid=N) ERROR MM-DD HH:MM:SS [file:line] `), CPython's
# frames (`  File "…", line N, in f`, the source line indented by four, 3.11+ carets under the failing call).
WORKER = "(Worker pid=213) ERROR 08-03 13:35:33 [multiproc_executor.py:912] "
DIST = "/usr/local/lib/python3.12/dist-packages/torch/distributed"
TRACEBACK = [
    WORKER + "Traceback (most recent call last):",
    WORKER + f'  File "{DIST}/c10d_logger.py", line 83, in wrapper',
    WORKER + "    return func(*args, **kwargs)",
    WORKER + "           ^^^^^^^^^^^^^^^^^^^^^",
    WORKER + f'  File "{DIST}/c10d_logger.py", line 97, in wrapper',
    WORKER + "    func_return = func(*args, **kwargs)",
    WORKER + "                  ^^^^^^^^^^^^^^^^^^^^^",
    WORKER + f'  File "{DIST}/distributed_c10d.py", line 1831, in init_process_group',
    WORKER + "    store, rank, world_size = next(rendezvous_iterator)",
    WORKER + "                              ^^^^^^^^^^^^^^^^^^^^^^^^^",
    WORKER + f'  File "{DIST}/rendezvous.py", line 279, in _env_rendezvous_handler',
    WORKER + "    store = _create_c10d_store(",
    WORKER + "            ^^^^^^^^^^^^^^^^^^^",
    WORKER + "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients joined.",
]


def unwrapped(pasted: list[str]) -> list[str]:
    unwrapper = Unwrapper(sniff(pasted))
    out = [u.text for number, text in enumerate(pasted) for u in unwrapper.feed(number, text)]
    return out + [u.text for u in unwrapper.end()]


def lines_of(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def read_back(data: bytes) -> list[str]:
    return [line.text for line in read_lines(LogSource(name="pasted", open_stream=lambda: io.BytesIO(data)))]


def test_a_traceback_wrapped_at_word_boundaries_is_joined_line_for_line() -> None:
    # GIVEN a worker's traceback pasted through a text box 76 columns wide: each line cut at a space, paths longer
    # than the column alone on their line, cuts inside the caret lines' margins keeping every space
    pasted = [piece for line in TRACEBACK for piece in word_wrap_line(line, 76)]
    assert len(pasted) > 2 * len(TRACEBACK)
    # WHEN sniffed THEN a wrap at word boundaries is found, at the longest piece that holds a space
    found = sniff(pasted)
    assert (found.word_wrap, found.wrap_width) == (True, max(len(p) for p in pasted if " " in p.strip()))
    # AND unwrapped THEN every line is the traceback's line again, byte for byte, as the traceback unwrapped reads
    assert unwrapped(pasted) == unwrapped(TRACEBACK)
    assert read_back(lines_of(pasted)) == read_back(lines_of(TRACEBACK))


def test_a_traceback_wrapped_at_word_boundaries_reads_as_its_exception(tmp_path: Path) -> None:
    # GIVEN the worker's traceback wrapped at 76 columns WHEN analysed
    pasted = [piece for line in TRACEBACK for piece in word_wrap_line(line, 76)]
    report = judge_text(tmp_path, lines_of(pasted).decode())
    # THEN the store's wait timed out (torch's DistStoreError `Timed out after N seconds waiting for clients`), read
    # from the whole exception line
    assert report["verdict"] == "timeout"
    assert "DistStoreError: Timed out after 601 seconds waiting for clients. 1/2 clients joined." in root_text(report)


def test_a_paste_cut_at_the_column_itself_is_no_word_wrap() -> None:
    # GIVEN the traceback cut at exactly 80 columns (a terminal's hard wrap: pieces all as long as the column)
    pasted = [line[i : i + 80] for line in TRACEBACK for i in range(0, len(line), 80)]
    # WHEN sniffed THEN it is the column's cut, joined without a space
    found = sniff(pasted)
    assert (found.word_wrap, found.wrap_width) == (False, 80)
    assert unwrapped(pasted) == unwrapped(TRACEBACK)


SLOW_INIT = "This may be caused by a slow __init__ or reconfigure method."


def test_a_messages_own_second_line_after_each_long_line_is_no_wrap() -> None:
    # GIVEN Ray Serve's controller warning, its message's second line on a line of its own (serve/_private/
    # deployment_state.py), repeated every 30 s: the longest lines, each followed by a rest that does not fit on them
    warning = (
        "(ServeController pid=2210) WARNING 2024-12-03 08:{:02d}:38,524 controller 2210 -- Deployment 'Llama70B' in "
        "application 'chat' has 1 replicas that have taken more than 30s to initialize."
    )
    head = [line for minute in range(10, 16) for line in (warning.format(minute), SLOW_INIT)]
    # WHEN sniffed THEN no wrap at word boundaries is assumed: the message's second lines stay lines of their own
    assert not sniff(head).word_wrap


def test_a_box_of_rules_around_a_report_line_is_no_wrap() -> None:
    # GIVEN Megatron's evaluation report (training.py evaluate_and_print_results): a rule of dashes, the losses on one
    # line, a rule, after the evaluation's own short lines and before NCCL's teardown lines
    rule = "-" * 107
    report = " validation loss at iteration 50 on test set | lm loss value: 1.585846E-01 | lm loss PPL: 1.171851E+00 | "
    nccl = "as04r5b22:2573730:2573730 [3] NCCL INFO comm 0x449c87a0 rank {} nranks 8 cudaDev 3 busId ad000 - "
    nccl += "Destroy COMPLETE"
    head = ["Evaluating iter 31/32", "Evaluating iter 32/32", rule, report, rule, *(nccl.format(r) for r in range(8))]
    # WHEN sniffed THEN no wrap is assumed
    assert sniff(head).wrap_width is None


# The golden fixtures a wrap shows itself in: at least this many of their lines longer than the column drawn (a log
# with one or two long lines cut cannot be told from one whose lines end there), none holding a bar's `\r` redraws
# (no text a box wraps)
CUT_LINES = 5


def wrap_width(log: Path) -> int:
    return random.Random(zlib.crc32(f"{log.name}|word-wrap".encode())).randint(80, 200)


def shows_a_wrap(log: Path) -> bool:
    long_lines = {line for line in plain_lines(log) if len(line) > wrap_width(log)}
    return b"\r" not in log.read_bytes() and len(long_lines) >= CUT_LINES


WRAPPED = [log for log in FIXTURE_LOGS if shows_a_wrap(log)]


@pytest.mark.parametrize("log", WRAPPED, ids=lambda log: log.name)
def test_a_golden_log_wrapped_at_spaces_reads_as_the_unwrapped_one(log: Path) -> None:
    # GIVEN a golden fixture log pasted through a text box of a seeded width (80-200 columns)
    data = word_wrap(plain_lines(log), random.Random(zlib.crc32(f"{log.name}|word-wrap".encode())), [])
    assert data.count(b"\n") > len(plain_lines(log))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / log.name
        path.write_bytes(data)
        # WHEN analysed THEN the verdict, the phases and the root cause are those of the log unwrapped
        assert judge(path) == judge_plain(log)


def test_the_golden_logs_wrapped_are_many() -> None:
    # GIVEN the golden fixtures WHEN those a wrap shows itself in are chosen THEN they are a good share of them
    assert len(WRAPPED) >= 20
