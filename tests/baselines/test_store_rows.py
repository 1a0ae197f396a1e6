"""Store rows this version cannot read (written by a newer logphase, or damaged) and ids out of range."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from tests.baselines.sglang_logs import startup_log
from tests.conftest import run_cli


def _store_with_two_runs(tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    for day in (1, 2):
        log = tmp_path / f"run-{day}.log"
        log.write_text(startup_log(datetime(2026, 5, day, 10, 0, 0), 100))
        assert run_cli("runs", "add", str(log), "--db", str(db)).exit_code == 0
    return db


def _tamper(db: Path, statement: str) -> None:
    with sqlite3.connect(db) as connection:
        connection.execute(statement)


def test_a_run_with_an_unknown_verdict_is_left_out_with_a_note(tmp_path: Path) -> None:
    # GIVEN two recorded runs, the first with a verdict this version does not know (a newer logphase's)
    db = _store_with_two_runs(tmp_path)
    _tamper(db, "UPDATE runs SET verdict = 'rebooted' WHERE id = 1")
    # WHEN listed
    result = run_cli("runs", "list", "--db", str(db), "--format", "json")
    # THEN run 2 is listed, and a note says why run 1 is not
    assert result.exit_code == 0
    assert [run["id"] for run in json.loads(result.stdout)["runs"]] == [2]
    assert result.stderr == (
        f"logphase: note: run 1 in {db} cannot be read by this logphase ('rebooted' is not a valid Verdict)\n"
    )
    # AND showing it is an error with a hint, exit 3
    shown = run_cli("runs", "show", "1", "--db", str(db))
    assert (shown.exit_code, shown.stderr.splitlines()[1]) == (
        3,
        "  hint: use the logphase that recorded it, or remove it: logphase runs rm",
    )


def test_a_phase_unknown_to_this_version_is_left_out_of_its_run(tmp_path: Path) -> None:
    # GIVEN a run with one phase row this version does not know
    db = _store_with_two_runs(tmp_path)
    _tamper(db, "UPDATE phases SET phase = 'defrag' WHERE run_id = 2 AND phase = 'kv_cache'")
    # WHEN shown THEN the run is shown without that phase, and a note names it
    result = run_cli("runs", "show", "2", "--db", str(db), "--format", "json")
    assert result.exit_code == 0
    assert "kv_cache" not in [phase["phase"] for phase in json.loads(result.stdout)["phases"]]
    listed = run_cli("runs", "list", "--db", str(db))
    assert "logphase: note: run 2: phases unknown to this logphase left out (defrag)" in listed.stderr


@pytest.mark.parametrize("command", ["show", "rm"])
def test_an_id_beyond_sqlite_integers_is_a_usage_error(tmp_path: Path, command: str) -> None:
    db = _store_with_two_runs(tmp_path)
    result = run_cli("runs", command, "99999999999999999999999", "--db", str(db))
    assert result.exit_code == 2
    assert "99999999999999999999999 is not in the range 1<=x<=9223372036854775807" in result.stderr
