"""Many ranks: tqdm bars (no rank tag) belong to the lowest rank, whatever order the ranks appear in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_json


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
