"""Every table of the terminal output fits COLUMNS (long cells cut with an ellipsis): every fixture at 80 columns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from logphase.cli import main
from logphase.report.text_table import ELLIPSIS, fit, simple_table
from tests.conftest import FIXTURES

LOGS = sorted((FIXTURES / "logs").glob("*/*.log"))
STACKS = sorted((FIXTURES / "stacks").iterdir())
RULE = re.compile(r"^-+(?:  -+)*$")  # the dashes under a table's header


def table_lines(output: str) -> list[str]:
    """The lines of every table in a table-format output: its header, its rule, its rows up to a blank line."""
    lines = output.splitlines()
    found: list[str] = []
    for index, line in enumerate(lines):
        if not RULE.match(line) or index == 0:
            continue
        found.append(lines[index - 1])
        for row in lines[index:]:
            if not row.strip():
                break
            found.append(row)
    return found


def run_at(columns: int, *args: str) -> str:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code in (0, 4, 5, 6), result.output
    return result.stdout


@pytest.mark.parametrize("log", LOGS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_table_of_analyze_fits_80_columns(log: Path) -> None:
    # GIVEN a fixture log WHEN analysed as a table on an 80-column terminal
    output = run_at(80, "analyze", "--post-mortem", str(log))
    # THEN no line of a table is wider than 80
    assert [line for line in table_lines(output) if len(line) > 80] == []


@pytest.mark.parametrize("dump", STACKS, ids=lambda path: path.name)
def test_every_table_of_stacks_fits_80_columns(dump: Path) -> None:
    output = run_at(80, "stacks", "--from", str(dump))
    tables = table_lines(output)
    assert tables, "a stacks report has its groups table"
    assert [line for line in tables if len(line) > 80] == []


def test_the_groups_table_of_a_wide_dump_is_cut_with_an_ellipsis_at_80_and_whole_at_200() -> None:
    # GIVEN the SGLang dump whose groups name long frames
    dump = str(FIXTURES / "stacks" / "sglang-watchdog-pyspy-tp4.log")
    narrow, wide = table_lines(run_at(80, "stacks", "--from", dump)), table_lines(run_at(200, "stacks", "--from", dump))
    # THEN at 80 columns a cell is cut, at 200 none is and the deepest frame is there whole
    assert any(ELLIPSIS in line for line in narrow)
    assert not any(ELLIPSIS in line for line in wide)
    assert any("all_reduce (torch/distributed/distributed_c10d.py:2501)" in line for line in wide)


def test_fit_cuts_the_widest_column_first_and_never_below_its_header() -> None:
    # GIVEN a table 2 + 2 + 30 wide (with gaps: 38) WHEN fitted to 24 columns
    rows = fit([["a", "b", "x" * 30]], ["id", "pid", "title"], 24)
    # THEN the title is cut to what is left (24 - 4 - 5 - 4 gaps = 11), with an ellipsis; the others are whole
    assert rows == [["a", "b", "x" * 10 + ELLIPSIS]]
    # AND a width too small for the headers leaves each column at its header's width (or MIN_CUT)
    assert fit([["a", "b", "x" * 30]], ["id", "pid", "title"], 5) == [["a", "b", "x" * 7 + ELLIPSIS]]
    assert simple_table([["a", "b", "x" * 30]], ["id", "pid", "title"], 24).splitlines() == [
        "id    pid    title",
        "----  -----  -----------",
        "a     b      " + "x" * 10 + ELLIPSIS,
    ]
