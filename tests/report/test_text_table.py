"""The terminal report's tables are laid out as tabulate's "simple" format lays them out, byte for
byte, without importing tabulate for the cells the report writes."""

from __future__ import annotations

import random

import pytest
import tabulate as tabulate_module
from tabulate import tabulate

from logphase.report.text_table import simple_table

# the cells the report's tables hold: phase names, rank sets, clock times, durations, progress,
# line numbers, empty cells
REPORT_CELLS = (
    "weight_load",
    "cuda_graph (draft)",
    "TP[0-7]",
    "main, TP0",
    "09:12:06",
    "2m35s",
    "0s",
    "11s",
    "30/30",
    "16/16 (2.5/s)",
    "261",
    "7",
    "",
    "rank 3",
    "  padded  ",
)
# what tabulate reads as a number or a flag besides them: signed, grouped, fractions, names of floats
NUMBER_LIKE = (
    "-3",
    "+4",
    "1,000",
    "1_000",
    "007",
    " 12",
    "1.5",
    ".5",
    "1e3",
    "nan",
    "inf",
    "1e999",
    "Infinity",
    "True",
    "False",
)
# what only tabulate lays out: colour codes, line breaks, tabs, wide and non-ASCII characters
FOREIGN = ("\x1b[31mred\x1b[0m", "a\nb", "tab\there", "é", "日本")
HEADERS = ("phase", "ranks", "n", "last progress", "")


def _tables(cells: tuple[str, ...], count: int, seed: int) -> list[tuple[list[list[str]], list[str]]]:
    chooser = random.Random(seed)
    tables = []
    for _ in range(count):
        width, height = chooser.randint(1, 5), chooser.randint(1, 4)
        palette = chooser.sample(cells, min(len(cells), chooser.randint(1, 5)))
        rows = [[chooser.choice(palette) for _ in range(width)] for _ in range(height)]
        tables.append((rows, [chooser.choice(HEADERS) for _ in range(width)]))
    return tables


@pytest.mark.slow  # real waits or a subprocess: the full suite's tier
def test_report_tables_are_laid_out_without_tabulate(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN tables of the cells the report writes, and what tabulate writes for each
    tables = _tables(REPORT_CELLS, 3000, seed=13)
    expected = [tabulate(rows, headers=headers) for rows, headers in tables]
    # WHEN they are laid out with tabulate out of reach
    monkeypatch.setattr(tabulate_module, "tabulate", None)
    laid_out = [simple_table(rows, headers) for rows, headers in tables]
    # THEN each is tabulate's text
    assert laid_out == expected


@pytest.mark.slow
@pytest.mark.parametrize("cells", [REPORT_CELLS + NUMBER_LIKE, NUMBER_LIKE, REPORT_CELLS + FOREIGN])
def test_any_table_is_laid_out_as_tabulate_lays_it_out(cells: tuple[str, ...]) -> None:
    # GIVEN tables with cells tabulate reads as numbers, or that only it lays out
    for rows, headers in _tables(cells, 3000, seed=31):
        # WHEN one is laid out
        # THEN it is tabulate's text
        assert simple_table(rows, headers) == tabulate(rows, headers=headers), (rows, headers)


def test_a_number_column_is_right_aligned_and_a_text_column_left_aligned() -> None:
    # GIVEN a column of line numbers (one empty) and a column of phases
    rows = [["weight_load", "261"], ["kv_cache", ""], ["cuda_graph", "7"]]
    # WHEN laid out
    text = simple_table(rows, ("phase", "line"))
    # THEN each column is as wide as its longest cell or its header and two spaces; a number column
    # and its header on the right, a text column on the left (no trailing spaces)
    assert text.split("\n") == [
        "phase          line",
        "-----------  ------",
        "weight_load     261",
        "kv_cache",
        "cuda_graph        7",
    ]


def test_a_column_kept_whole_is_cut_only_once_no_other_can_be() -> None:
    # GIVEN a stacks-like table 20 columns too wide, its `motion` words short but needed whole
    rows = [["1", "working (on CPU)", "load_weights_busy (model_runner.py:43)", "load_model (model_runner.py:13)"]]
    headers = ["group", "motion", "where", "inside"]
    # WHEN fitted to 70 columns, `motion` kept whole
    table = simple_table(rows, headers, 70, whole=("motion",))
    # THEN every line fits, the motion cell is whole, and the long text columns took the cut
    assert max(len(line) for line in table.splitlines()) <= 70
    assert "working (on CPU)" in table and "…" in table
    # AND at a width only cutting it too can reach, it is cut as well (never wider than asked while it can narrow)
    narrow = simple_table(rows, headers, 40, whole=("motion",))
    assert "working (on CPU)" not in narrow
