"""A tqdm tick the input ends inside: tqdm ends every tick's line with `]` and prints its count `n/total` before its
clock (`{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]`, the bar
format SGLang and vLLM give their shard loaders). A last line cut before the end of its count has not said how far
the bar got: the whole tick before it gives the bar's count; the cut tick is still the stall's line, its first words
whole (fixtures/realworld/README.md, `root_cause_line`). A count the line ends on is whole where the tick's percentage
is tqdm's for it (tqdm.std.format_meter prints `{n / total * 100:3.0f}%` of the same n and total)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tqdm import tqdm

from tests.conftest import judge_text, root_text

HEAD = (
    "INFO 01-09 06:24:15 model_runner.py:1092] Starting to load model Qwen/Qwen2-VL-7B-Instruct-AWQ...\n"
    "Loading safetensors checkpoint shards:   0% Completed | 0/16 [00:00<?, ?it/s]\n"
    "Loading safetensors checkpoint shards:  50% Completed | 8/16 [00:05<00:05,  1.41it/s]\n"
)
WHOLE = "Loading safetensors checkpoint shards:  50% Completed | 8/16 [00:05<00:05,  1.41it/s]"


def test_a_last_tick_cut_inside_its_count_is_quoted_its_count_the_whole_ticks(tmp_path: Path) -> None:
    # GIVEN a paste whose last line is the next tick cut inside its total (`9/1` of `9/16`: 56 % is not 9/1)
    cut = "Loading safetensors checkpoint shards:  56% Completed | 9/1"
    report = judge_text(tmp_path, HEAD + cut + "\n")
    # THEN stalled in weight_load, the cut tick the line quoted (its first words whole), the reason saying the bar's
    # count is the whole tick's before it
    assert report["verdict"] == "stalled"
    assert report["phase"] == "weight_load"
    assert root_text(report) == cut
    assert report["root_cause"]["line"] == 4
    assert (
        "line 4, the last, is a bar's tick cut inside its count: the bar's count is the whole tick's"
        in (report["reason"])
    )


def test_a_last_tick_cut_before_its_count_is_quoted(tmp_path: Path) -> None:
    # GIVEN a last line cut right after its percentage, 100% (no count: the bar's end not said)
    report = judge_text(tmp_path, HEAD + "Loading safetensors checkpoint shards: 100%\n")
    # THEN that cut tick is the line quoted, not the whole one before it (WHOLE, line 3)
    assert root_text(report) == "Loading safetensors checkpoint shards: 100%"
    assert root_text(report) != WHOLE


def test_a_last_tick_whose_count_came_whole_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN a last line cut inside its rate, its count `9/16` followed by its clock
    cut = "Loading safetensors checkpoint shards:  56% Completed | 9/16 [00:05<00:04,  1.4"
    report = judge_text(tmp_path, HEAD + cut + "\n")
    # THEN it said how far the bar got: it is the line quoted
    assert root_text(report) == cut


def test_a_cut_tick_with_no_whole_tick_before_it_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN a paste whose only tick is cut after its percentage
    cut = "Loading safetensors checkpoint shards:  56% Completed | 9/16"
    report = judge_text(tmp_path, HEAD.splitlines(keepends=True)[0] + cut + "\n")
    # THEN it still shows the bar: it is the line quoted
    assert root_text(report) == cut


def test_a_cut_tick_inside_the_paste_is_no_fragment(tmp_path: Path) -> None:
    # GIVEN the cut-looking tick followed by a further line of the run
    text = HEAD + "Loading safetensors checkpoint shards:  56% Completed | 9/16\nINFO 01-09 06:24:30 x.py:1] hello\n"
    report = judge_text(tmp_path, text)
    # THEN it is not the input's end: it is the bar's last progress, the line quoted
    assert root_text(report) == "Loading safetensors checkpoint shards:  56% Completed | 9/16"


def test_a_last_tick_ending_on_a_count_its_percentage_agrees_with_stays_the_cause(tmp_path: Path) -> None:
    # GIVEN vLLM's capture bar whose last tick is cut right after its count, 39/67 being 58 % (realworld 1040's shape)
    bar = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): "
    text = (
        f"{bar} 55%|█████▌    | 37/67 [00:03<00:03,  9.55it/s]\n"
        f"{bar} 57%|█████▋    | 38/67 [00:04<00:03,  9.50it/s]\n"
        f"{bar} 58%|█████▊    | 39/67\n"
    )
    report = judge_text(tmp_path, text)
    # THEN the count is whole: the cut tick is the furthest the bar got, the line quoted, no fragment named
    assert report["phase"] == "cuda_graph"
    assert root_text(report) == f"{bar} 58%|█████▊    | 39/67"
    assert "cut inside its count" not in report["reason"]


CAPTURE = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(total=st.integers(2, 2000), data=st.data())
def test_a_cut_tick_is_quoted_wherever_it_was_cut(tmp_path: Path, total: int, data: st.DataObject) -> None:
    # GIVEN two ticks of vLLM's capture bar as tqdm formats them (`{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<
    # {remaining}, {rate_fmt}{postfix}]`), the second cut at any point after its percentage
    n = data.draw(st.integers(1, total), label="n")
    before = tqdm.format_meter(n - 1, total, 3.0, prefix=CAPTURE, rate=9.5)
    tick = tqdm.format_meter(n, total, 3.1, prefix=CAPTURE, rate=9.5)
    count_end = tick.index(f"| {n}/{total} [") + len(f"| {n}/{total}")
    cut_at = data.draw(st.integers(tick.index("%|") + 1, len(tick) - 1), label="cut_at")
    cut = tick[:cut_at].rstrip()
    # WHEN the paste ends on the cut tick
    report = judge_text(tmp_path, f"{before}\n{cut}\n")
    # THEN the cut tick is quoted, its first words whole; the reason says the bar's count is the whole tick's exactly
    # where the count was cut
    assert root_text(report) == cut
    assert ("the bar's count is the whole tick's" in report["reason"]) == (cut_at < count_end)
