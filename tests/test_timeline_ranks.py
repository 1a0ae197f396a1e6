"""Many ranks: tqdm bars (no rank tag) belong to the lowest rank, whatever order the ranks appear in."""

from __future__ import annotations

from pathlib import Path

import pytest

from logphase.logs import timeline
from logphase.report.analysis import LISTED_RANKS
from tests.conftest import run_cli, run_json


def _log(tmp_path: Path, ranks: list[int]) -> Path:
    lines = [
        f"[2025-06-01 10:00:{n % 60:02d} TP{rank}] Load weight begin. avail mem=70.10 GB"
        for n, rank in enumerate(ranks)
    ]
    lines += [
        f"Loading safetensors checkpoint shards:  {done * 10}% Completed | {done}/10 [00:{done:02d}<00:10,  1.00it/s]"
        for done in range(1, 4)
    ]
    path = tmp_path / "ranks.log"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_bar_goes_to_the_lowest_rank_of_4096_in_any_order(tmp_path: Path) -> None:
    # GIVEN 4,096 TP ranks that begin loading in a shuffled order (TP0 neither first nor last), then a bar
    order = [*range(4095, 2000, -1), 0, *range(1, 2001)]
    assert sorted(order) == list(range(4096))
    # WHEN analysed
    _, report = run_json("analyze", "--post-mortem", str(_log(tmp_path, order)))
    # THEN every rank is there and the bar's progress is TP0's weight_load
    assert len(report["ranks"]) == 4096
    bars = [span for span in report["phases"] if span["progress"] is not None]
    assert [(span["phase"], span["rank"], span["progress"]["done"]) for span in bars] == [("weight_load", "TP0", 3)]


def _loading(tmp_path: Path, ranks: int) -> Path:
    """TP0 loads its weights from 10:00:00 to 10:01:00; every other rank begins loading at 10:05:00."""
    end = "type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=55.23 GB, mem usage=15.00 GB."
    lines = [
        "[2025-06-01 10:00:00 TP0] Load weight begin. avail mem=70.10 GB",
        f"[2025-06-01 10:01:00 TP0] Load weight end. {end}",
    ]
    lines += [f"[2025-06-01 10:05:00 TP{rank}] Load weight begin. avail mem=70.10 GB" for rank in range(1, ranks)]
    path = tmp_path / "loading.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_ranks_past_the_cap_are_counted_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a log of 6 ranks, timelines that follow at most 4, and TP0 alone through its load
    monkeypatch.setattr(timeline, "MAX_RANKS", 4)
    log = _loading(tmp_path, 6)
    # WHEN analysed
    code, report = run_json("analyze", "--post-mortem", str(log))
    # THEN all 6 are counted, the first 4 followed (their phases, their states), and the 2 others said
    assert code == 4 and report["verdict"] == "stalled"
    assert report["ranks"] == [f"TP{rank}" for rank in range(6)]
    assert [state["rank"] for state in report["rank_states"]] == ["TP0", "TP1", "TP2", "TP3"]
    assert {span["rank"] for span in report["phases"]} == {"TP0", "TP1", "TP2", "TP3"}
    assert report["ranks_not_followed"] == 2
    assert report["culprit_ranks"] == ["TP1", "TP2", "TP3"]
    assert report["confidence"] == "medium"
    assert any("2 more ranks after the first 4 are counted, not followed" in d for d in report["evidence"]["against"])
    # AND the table's rank rows end on the ranks left out
    table = run_cli("analyze", "--post-mortem", str(log)).stdout
    assert "and 2 more ranks, not followed" in table


def test_a_log_within_the_cap_is_followed_whole(tmp_path: Path) -> None:
    # GIVEN 6 ranks, TP0 alone through its load, and the shipped cap
    code, report = run_json("analyze", "--post-mortem", str(_loading(tmp_path, 6)))
    assert code == 4
    # THEN every rank is followed and nothing is said of ranks left out
    assert report["ranks_not_followed"] == 0 and report["confidence"] == "high"
    assert report["culprit_ranks"] == [f"TP{rank}" for rank in range(1, 6)]


def test_a_long_culprit_list_is_cut_with_a_count(tmp_path: Path) -> None:
    # GIVEN LISTED_RANKS + 37 ranks, TP0 alone through its load: the others behind
    log = _loading(tmp_path, LISTED_RANKS + 37)
    # WHEN reported in each text format THEN the culprits listed are the first LISTED_RANKS, then a count
    for output in ("table", "markdown", "html"):
        text = run_cli("analyze", "--post-mortem", str(log), "--format", output).stdout
        line = next(line for line in text.splitlines() if "Culprit ranks: " in line)
        assert line.count("TP") == LISTED_RANKS and "TP64" in line and "TP65" not in line, output
        assert "and 36 more ranks" in line, output
