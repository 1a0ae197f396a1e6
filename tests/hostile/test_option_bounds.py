"""Options with bounds: numbers that are nan, inf, negative or absurd are usage errors (exit 2) before
any work; --jobs never starts more processes than there are cores; COLUMNS cannot make a table huge."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from logphase.cli import main
from logphase.cli.common import MAX_WIDTH, jobs_from, terminal_width
from logphase.jobs import usable_cores
from logphase.report.formats import DEFAULT_WIDTH
from tests.conftest import FIXTURES, run_cli

LOG = str(FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log")
DUMP = str(FIXTURES / "stacks" / "pyspy-subprocesses-idle.json")

# (command before the option, option): every numeric option a user can type
NUMERIC = [
    (["watch", LOG], "--timeout"),
    (["watch", LOG], "--interval"),
    (["watch", LOG], "--stall-after"),
    (["watch", LOG], "--pid"),
    (["analyze", LOG], "--stall-after"),
    (["analyze", LOG], "--pid"),
    (["analyze", LOG], "--jobs"),
    (["bundle", LOG], "--cut-over"),
    (["bundle", LOG], "--pid"),
    (["bundle", LOG], "--jobs"),
    (["stacks", "--from", DUMP], "--interval"),
    (["stacks", "--from", DUMP], "--timeout"),
    (["stacks", "--from", DUMP], "--samples"),
    (["stacks"], "--pid"),
    (["runs", "list"], "--lock-timeout"),
    (["analyze", LOG, "--record"], "--lock-timeout"),
]
BAD = ["nan", "-nan", "inf", "-inf", "-1", "1e300", str(2**63), "abc", ""]


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize(("command", "option"), NUMERIC, ids=lambda x: x if isinstance(x, str) else x[0])
def test_a_bad_number_is_a_usage_error(tmp_path: Path, command: list[str], option: str, value: str) -> None:
    # GIVEN a numeric option given nan, an infinity, a negative, an absurd or no number
    # WHEN the command runs THEN it is refused as a usage error naming the option, before any work
    if option == "--jobs" and value == str(2**63):
        pytest.skip("a whole number of jobs is capped at the cores, not refused (below)")
    extra = ["--db", str(tmp_path / "runs.db")] if command[0] in ("runs", "watch") or "--record" in command else []
    extra += ["-o", str(tmp_path / "b.tgz")] if command[0] == "bundle" else []
    result = run_cli(*command, option, value, *extra)
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert f"Invalid value for '{option}'" in result.stderr
    assert "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_jobs_beyond_the_cores_is_capped_with_a_note(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN --jobs far above the cores this process may use
    cores = usable_cores()
    # WHEN turned into the jobs to run THEN no more than the cores, and a note says so
    assert jobs_from(cores + 62).count == cores
    assert f"logphase: note: --jobs {cores + 62} is more than the {cores} usable cores: using {cores}" in (
        capsys.readouterr().err
    )
    assert jobs_from(1).count == 1 and capsys.readouterr().err == ""


def test_the_cli_says_the_jobs_cap() -> None:
    result = run_cli("analyze", LOG, "--jobs", "4096")
    assert result.exit_code == 0, result.output
    assert f"--jobs 4096 is more than the {usable_cores()} usable cores" in result.stderr


@pytest.mark.parametrize(
    ("columns", "width"),
    [
        ("120", 120),
        (str(MAX_WIDTH), MAX_WIDTH),
        ("1e8", DEFAULT_WIDTH),
        (str(2**63), DEFAULT_WIDTH),
        (str(MAX_WIDTH + 1), DEFAULT_WIDTH),
        ("abc", DEFAULT_WIDTH),
        ("-5", DEFAULT_WIDTH),
        ("0", DEFAULT_WIDTH),
    ],
)
def test_columns_beyond_reason_is_ignored(monkeypatch: pytest.MonkeyPatch, columns: str, width: int) -> None:
    # GIVEN COLUMNS set to a width, an absurd or a junk value (and no terminal behind stdout)
    monkeypatch.setenv("COLUMNS", columns)
    # THEN the table's width is COLUMNS where it is a sane width, else the default
    assert terminal_width() == width


def test_a_huge_columns_draws_the_table_at_the_default_width() -> None:
    # GIVEN COLUMNS = 2**63 WHEN a table is drawn THEN it is the table drawn at the default width
    # (post-mortem: a live report says "as of" the wall clock, which may tick between the two runs)
    def table(columns: str) -> str:
        result = CliRunner().invoke(
            main, ["analyze", "--post-mortem", LOG], env={"COLUMNS": columns}, catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        return result.stdout

    assert table(str(2**63)) == table(str(DEFAULT_WIDTH))
