"""Year-less and time-of-day stamps take the year and the date of the log's dated lines, whatever format
and prefix those are in, on the fast path as on the plain one; a log with no dated line keeps the
reference's (never a future date)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from logphase import scan as scanning
from logphase.logs.reader import open_sources
from logphase.packs import load_packs
from logphase.phases import Phase
from tests.conftest import FIXTURES

PACKS = load_packs()
# Judged in another year than the logs below were written in.
AS_OF = datetime(2026, 12, 1, 12, 0, 0)

# torchrun's agent logs through torch._logging's glog-shaped formatter (`I0603 16:40:02.000000 771 path:line] `,
# no year: torch 2.13 _logging/_internal.py:969,1026); the workers' c10 lines are `[rank<R>]:[<SEV><MMDD>
# <HH:MM:SS>.<ns> <File.cpp>:<line>] ` (ref 2.1), their scripts' Python logging `%(asctime)s - %(levelname)s - `
# (CPython's default asctime `%Y-%m-%d %H:%M:%S,mmm`, with the year); NCCL_DEBUG=INFO's `host:pid:tid [dev]
# NCCL INFO ` lines have no stamp (ref 1), nor have torch's prefix (NCCL writes them itself).
AGENT = [
    "I0603 16:40:02.000000 771 torch/distributed/launcher/api.py:194] Starting elastic_operator with launch configs:",
    *["W0603 16:40:02.000000 771 torch/distributed/run.py:793] *****************************************"] * 3,
]
SCRIPT = "2025-06-03 16:40:{second:02d},709 - INFO - step {step} | loss 2.0000 | 388 ms/step"
NCCL = "node1:77{rank}:80{rank} [{rank}] NCCL INFO Channel 0{channel}/24 :    0   1"
WATCHDOG = (
    "[E603 16:50:08.382218472 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=9021, OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, Timeout(ms)=600000) "
    "ran for 600060 milliseconds before timing out."
)
STEPS = 40  # script lines per rank, each followed by NCCL lines: steady runs the fast path summarises
FIRST_STEP = datetime(2025, 6, 3, 16, 40, 10, 709000)  # step 0's stamp
WATCHDOG_TIME = datetime(2025, 6, 3, 16, 50, 8, 382218)  # the c10 stamp's 9 fraction digits cut to 6


def _torchrun_log(script_prefix: str, nccl_prefix: str, c10_prefix: str) -> str:
    """The agent's year-less lines first; then, per step, the two workers' dated script lines behind
    `script_prefix` and their NCCL lines behind `nccl_prefix`; last their year-less watchdog lines
    behind `c10_prefix` (each with `{rank}`)."""
    lines = list(AGENT)
    for step in range(STEPS):
        for rank in (0, 1):
            lines.append(script_prefix.format(rank=rank) + SCRIPT.format(second=10 + step // 4, step=step))
        for rank in (0, 1):
            lines += [nccl_prefix.format(rank=rank) + NCCL.format(rank=rank, channel=channel) for channel in range(5)]
    for rank in (0, 1):
        lines.append(c10_prefix.format(rank=rank) + WATCHDOG.format(rank=rank))
    return "\n".join(lines) + "\n"


@pytest.fixture
def short_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """The head read in full ends at the first dated line (line 5): the fast path reads past it."""
    monkeypatch.setattr(scanning.feed, "YEAR_LOOKAHEAD", 5)


def _scan(path: Path, *, fast: bool) -> scanning.ScanResult:
    return scanning.scan(open_sources([str(path)]), PACKS, AS_OF, fast=fast)


def _times(result: scanning.ScanResult) -> tuple[object, ...]:
    timeline = result.timeline
    return (
        timeline.first_time,
        timeline.last_time,
        tuple(event.time for event in timeline.failures),
        tuple((span.phase, span.rank, span.start, span.end) for span in timeline.spans),
    )


@pytest.mark.parametrize(
    ("script_prefix", "nccl_prefix", "c10_prefix"),
    [
        # the global rank's prefix once torch.distributed set it
        ("[rank{rank}]:", "", "[rank{rank}]:"),
        # torchrun --tee's `[<role><local_rank>]:` (torch 2.13 elastic/multiprocessing/tail_log.py:130), an envelope
        ("[default{rank}]:", "[default{rank}]:", "[default{rank}]:[rank{rank}]:"),
    ],
)
def test_torchrun_year_less_lines_take_the_year_of_the_scripts_dated_lines(
    tmp_path: Path, short_head: None, script_prefix: str, nccl_prefix: str, c10_prefix: str
) -> None:
    # GIVEN a torchrun log written in 2025: year-less agent and watchdog lines, dated script lines
    # behind the workers' prefix, unstamped NCCL lines after each
    log = tmp_path / "torchrun.log"
    log.write_text(_torchrun_log(script_prefix, nccl_prefix, c10_prefix))
    # WHEN it is scanned on 2026-12-01, on the fast path and reading every line
    fast, plain = _scan(log, fast=True), _scan(log, fast=False)
    timeline = plain.timeline
    # THEN the agent's start and the watchdog lines are in 2025
    assert (timeline.first_time, timeline.last_time) == (datetime(2025, 6, 3, 16, 40, 2), WATCHDOG_TIME)
    assert [event.time for event in timeline.failures] == [WATCHDOG_TIME] * 2
    # AND the NCCL lines start at the first script line's stamp: the script's lines are read as stamps
    assert {span.start for span in timeline.spans if span.phase is Phase.DIST_INIT} == {FIRST_STEP}
    # AND no stamp was set aside as another clock's
    assert not [note for note in plain.notes if "another clock's stamp" in note]
    # AND both paths give the same times
    assert _times(fast) == _times(plain)


def test_a_torchrun_fixture_is_dated_by_its_dated_lines() -> None:
    # GIVEN the gloo hang fixture: year-less agent lines (`W0603 16:40:02.000000 771 torch/distributed/run.py:793] `,
    # torchrun's launch notes, placed by their module), then `[rank1]:2025-06-03 16:40:08,709 - INFO - ...` lines,
    # unstamped `[rankN]:[Gloo] Rank N is connected` lines, and last `[rank3]:2025-06-03 16:40:11,464 - INFO - ...`
    log = FIXTURES / "logs" / "torch" / "gloo-hang-dist-init.log"
    for fast in (True, False):
        # WHEN scanned on 2026-12-01
        result = _scan(log, fast=fast)
        # THEN its times are in 2025, not in the year it is judged in: the agent's year-less first line too
        assert result.timeline.first_time == datetime(2025, 6, 3, 16, 40, 2)
        assert result.last_lines[0][1] == datetime(2025, 6, 3, 16, 40, 11, 464000)


# SGLang 0.3.0's `[%H:%M:%S TPn]` has no date (ref sglang §1.1); vLLM's `INFO %m-%d %H:%M:%S` has no year
# (ref 6.1); Python logging's asctime has both.
SGLANG_03 = [
    "[23:16:48] server_args=ServerArgs(model_path='meta-llama/Meta-Llama-3-8B-Instruct', tp_size=2)",
    "[23:16:53 TP0] Init nccl begin.",
    "[23:16:54 TP0] Load weight begin. avail mem=78.54 GB",
    "INFO 09-19 23:16:56 weight_utils.py:236] Using model weights format ['*.safetensors']",
    "[23:17:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=70.96 GB",
    "[23:17:11] The server is fired up and ready to roll!",
]


@pytest.mark.parametrize(
    ("dated", "day"),
    [
        # vLLM's month-day, in the latest year not after the reference
        ("INFO 09-19 23:16:56 weight_utils.py:236] Using model weights format ['*.safetensors']", (2026, 9, 19)),
        # a launcher's Python logging line: its year too
        ("2024-09-19 23:16:56,100 - INFO - Using model weights format ['*.safetensors']", (2024, 9, 19)),
    ],
)
def test_sglang_03_times_of_day_take_the_date_of_the_dated_lines(
    tmp_path: Path, dated: str, day: tuple[int, int, int]
) -> None:
    # GIVEN an SGLang 0.3 log whose only date is on a line of another logger, after its first lines
    log = tmp_path / "sglang.log"
    log.write_text("\n".join(dated if line.startswith("INFO 09-19") else line for line in SGLANG_03) + "\n")
    for fast in (True, False):
        # WHEN scanned on 2026-12-01
        timeline = _scan(log, fast=fast).timeline
        # THEN its times of day are on that line's date, before it and after it
        assert timeline.first_time == datetime(*day, 23, 16, 48)
        assert timeline.last_time == datetime(*day, 23, 17, 11)


def test_a_time_of_day_before_midnight_is_on_the_day_before_the_first_dated_line(tmp_path: Path) -> None:
    # GIVEN SGLang 0.3 lines just before midnight, then the first dated line just after it
    log = tmp_path / "sglang.log"
    log.write_text(
        "[23:59:58 TP0] Init nccl begin.\n"
        "INFO 09-20 00:00:01 weight_utils.py:236] Using model weights format ['*.safetensors']\n"
        "[00:00:02 TP0] Load weight begin. avail mem=78.54 GB\n"
    )
    # WHEN scanned on 2026-12-01
    timeline = _scan(log, fast=False).timeline
    # THEN the first line is on 19 September, the last on 20 September
    assert (timeline.first_time, timeline.last_time) == (
        datetime(2026, 9, 19, 23, 59, 58),
        datetime(2026, 9, 20, 0, 0, 2),
    )


def test_the_sglang_03_fixture_is_dated_by_its_vllm_lines() -> None:
    # GIVEN the SGLang 0.3 fixture: `[23:16:48]` ... `[23:17:11]`, with vLLM's `INFO 09-19 23:16:56` lines
    log = FIXTURES / "logs" / "sglang" / "v030-time-only-ready.log"
    # WHEN scanned on 2026-12-01
    result = _scan(log, fast=True)
    # THEN it runs on 19 September 2026, and no line is another clock's
    assert (result.timeline.first_time, result.timeline.last_time) == (
        datetime(2026, 9, 19, 23, 16, 48),
        datetime(2026, 9, 19, 23, 17, 11),
    )
    assert not [note for note in result.notes if "another clock's stamp" in note]


@pytest.mark.parametrize(
    ("lines", "first", "last"),
    [
        # year-less only: the latest year that does not put a line after the reference (+ one day)
        (
            [AGENT[0], "[rank0]:" + WATCHDOG.format(rank=0)],
            datetime(2026, 6, 3, 16, 40, 2),
            datetime(2026, 6, 3, 16, 50, 8, 382218),
        ),
        (
            [AGENT[0].replace("I0603", "I1223"), "[rank0]:" + WATCHDOG.format(rank=0).replace("E603", "E1223")],
            datetime(2025, 12, 23, 16, 40, 2),
            datetime(2025, 12, 23, 16, 50, 8, 382218),
        ),
        # times of day only: the reference's day, the day before for a time after the reference's
        (SGLANG_03[:3], datetime(2026, 11, 30, 23, 16, 48), datetime(2026, 11, 30, 23, 16, 54)),
        (
            ["[09:00:00 TP0] Init nccl begin.", "[09:00:05 TP0] Load weight begin. avail mem=78.54 GB"],
            datetime(2026, 12, 1, 9, 0, 0),
            datetime(2026, 12, 1, 9, 0, 5),
        ),
    ],
)
def test_a_log_with_no_dated_line_keeps_the_reference_dates(
    tmp_path: Path, lines: list[str], first: datetime, last: datetime
) -> None:
    # GIVEN a log whose stamps have no year (or no date) on any line
    log = tmp_path / "undated.log"
    log.write_text("\n".join(lines) + "\n")
    for fast in (True, False):
        # WHEN scanned on 2026-12-01 12:00
        timeline = _scan(log, fast=fast).timeline
        # THEN they are dated from the reference, never after it
        assert (timeline.first_time, timeline.last_time) == (first, last)
