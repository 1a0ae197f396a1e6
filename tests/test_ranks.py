"""The one rank-set form every report and stacks headline uses."""

from __future__ import annotations

import pytest

from logphase.ranks import format_rank_set, list_ranks


@pytest.mark.parametrize(
    ("ranks", "written"),
    [
        (["TP0", "TP1", "TP3"], "TP[0-1,3]"),
        (["TP3", "TP10", "TP2", "TP11", "TP4"], "TP[2-4,10-11]"),
        (["TP2"], "TP2"),
        (["TP2", "TP2"], "TP2"),
        (["DP1 TP0", "DP0 TP1", "DP0 TP0"], "DP0 TP[0-1], DP1 TP0"),
        (["rank 0", "rank 1", "rank 2"], "rank[0-2]"),
        (["rank 5"], "rank 5"),
        ([None, "TP0", "TP1"], "main, TP[0-1]"),
        (["TP1", "scheduler", "TP0"], "scheduler, TP[0-1]"),
        ([], ""),
    ],
)
def test_a_rank_set_is_written_in_one_compact_form(ranks: list[str | None], written: str) -> None:
    # GIVEN rank names as prefixes and stacks label them WHEN written THEN one form: ranges per group,
    # no space before the bracket, groups in natural order separated by ", ", `main` for the main process
    assert format_rank_set(ranks) == written


def test_a_headline_lists_few_ranks_and_ranges_many() -> None:
    assert list_ranks(["TP3", "TP0", "TP1"]) == "TP0, TP1, TP3"
    assert list_ranks(["rank 4", "rank 0", "rank 1", "rank 2", "rank 3"]) == "rank[0-4]"
