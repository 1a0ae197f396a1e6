"""The run store: `runs add|list|show|rm`, `analyze --record`, concurrency, and files that are not ours."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from logphase.baselines.store import APPLICATION_ID, RunStore
from logphase.errors import StoreError
from tests.baselines.sglang_logs import startup_log
from tests.conftest import REPO, run_cli


def _log(tmp_path: Path, day: int, capture: float = 100, name: str | None = None) -> Path:
    path = tmp_path / (name or f"run-{day}.log")
    path.write_text(startup_log(datetime(2026, 5, day, 10, 0, 0), capture))
    return path


def _list(db: Path) -> list[dict]:  # type: ignore[type-arg]
    result = run_cli("runs", "list", "--db", str(db), "--format", "json")
    assert result.exit_code == 0
    return json.loads(result.stdout)["runs"]  # type: ignore[no-any-return]


def test_the_same_log_recorded_twice_is_one_run_and_a_new_label_updates_it(tmp_path: Path) -> None:
    # GIVEN one log, and a copy of it at another path
    log = _log(tmp_path, 1)
    copy = tmp_path / "copy.log"
    copy.write_bytes(log.read_bytes())
    db = tmp_path / "runs.db"
    # WHEN it is added, added again by its copy with a label
    first = run_cli("runs", "add", str(log), "--db", str(db))
    second = run_cli("runs", "add", str(copy), "--label", "hung", "--db", str(db))
    # THEN there is one run, labelled
    assert (first.stderr, second.stderr) == (
        "recorded run 1: ready, Qwen3-32B TP2\n",
        "updated run 1: ready (labelled hung), Qwen3-32B TP2\n",
    )
    runs = _list(db)
    assert [(r["id"], r["outcome"], r["verdict"], r["lines"]) for r in runs] == [(1, "hung", "ready", 43)]


def test_a_log_that_grew_since_it_was_recorded_updates_its_run(tmp_path: Path) -> None:
    # GIVEN a live log recorded 66 s into capture
    log = tmp_path / "server.log"
    full = startup_log(datetime(2026, 5, 3, 10, 0, 0), 100)
    log.write_text(startup_log(datetime(2026, 5, 3, 10, 0, 0), 100, until_s=66))
    db = tmp_path / "runs.db"
    run_cli("analyze", "--post-mortem", str(log), "--record", "--db", str(db))
    # WHEN the server finished and the log is recorded again
    log.write_text(full)
    result = run_cli("analyze", "--post-mortem", str(log), "--record", "--db", str(db))
    # THEN the same run now says ready
    assert result.stderr == "updated run 1: ready, Qwen3-32B TP2\n"
    assert [(r["id"], r["outcome"], r["stop_point"]["phase"]) for r in _list(db)] == [(1, "ready", "ready")]


def test_runs_show_and_rm(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_cli("runs", "add", str(_log(tmp_path, 1)), str(_log(tmp_path, 2, 110)), "--db", str(db))
    shown = run_cli("runs", "show", "2", "--db", str(db), "--format", "json")
    run = json.loads(shown.stdout)
    capture = next(p for p in run["phases"] if p["phase"] == "cuda_graph")
    assert (run["id"], run["fingerprint"]["tp_size"], capture["seconds"], capture["start_s"], run["ready_s"]) == (
        2,
        2,
        110.0,
        80.0,
        212.0,
    )
    table = run_cli("runs", "show", "2", "--db", str(db)).stdout
    assert "cuda_graph   1m20s          1m50s" in table
    removed = run_cli("runs", "rm", "1", "--db", str(db))
    assert (removed.exit_code, removed.stderr, [r["id"] for r in _list(db)]) == (0, "removed run 1\n", [2])
    missing = run_cli("runs", "rm", "1", "--db", str(db))
    assert (missing.exit_code, missing.stderr.splitlines()[0]) == (3, f"logphase: error: no run 1 in {db}")


def test_default_path_is_under_xdg_data_home_and_logphase_db_overrides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _log(tmp_path, 1)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("LOGPHASE_DB", raising=False)
    run_cli("runs", "add", str(log))
    assert (tmp_path / "data" / "logphase" / "runs.db").exists()
    monkeypatch.setenv("LOGPHASE_DB", str(tmp_path / "other.db"))
    run_cli("runs", "add", str(log))
    assert [r["id"] for r in _list(tmp_path / "other.db")] == [1]


def test_list_without_a_store_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "absent.db"
    result = run_cli("runs", "list", "--db", str(db))
    assert (result.exit_code, result.stderr, db.exists()) == (0, f"no runs recorded yet ({db})\n", False)


@pytest.mark.slow
def test_eight_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    # GIVEN eight different logs
    logs = [_log(tmp_path, day, 100 + day) for day in range(1, 9)]
    db = tmp_path / "runs.db"
    env = {**os.environ, "LOGPHASE_DB": str(db), "PYTHONPATH": str(REPO)}
    # WHEN eight processes add them at the same time, to a store none of them has created yet
    procs = [
        subprocess.Popen([sys.executable, "-m", "logphase", "runs", "add", str(log)], env=env, stderr=subprocess.PIPE)
        for log in logs
    ]
    errors = [proc.communicate(timeout=120)[1].decode() for proc in procs]
    # THEN every one succeeded and every run is there, once
    assert [proc.returncode for proc in procs] == [0] * 8, errors
    assert sorted(r["paths"][0] for r in _list(db)) == sorted(str(log) for log in logs)
    assert sorted(r["id"] for r in _list(db)) == list(range(1, 9))


def test_a_corrupt_store_is_an_error_with_a_hint_and_is_never_overwritten(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    garbage = b"this is not a database\x00" * 300
    db.write_bytes(garbage)
    result = run_cli("runs", "add", str(_log(tmp_path, 1)), "--db", str(db))
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        f"logphase: error: {db}: unreadable run store: file is not a database",
        "  hint: the file is damaged or not SQLite; it was left untouched: move it away, or use --db",
    ]
    assert db.read_bytes() == garbage


def test_a_foreign_sqlite_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    # GIVEN another program's SQLite database at the store's path
    db = tmp_path / "runs.db"
    with sqlite3.connect(db) as foreign:
        foreign.execute("CREATE TABLE songs (title TEXT)")
        foreign.execute("INSERT INTO songs VALUES ('x')")
    before = db.read_bytes()
    result = run_cli("runs", "add", str(_log(tmp_path, 1)), "--db", str(db))
    assert (result.exit_code, result.stderr.splitlines()[0]) == (
        3,
        f"logphase: error: {db}: not a logphase run store (a SQLite database of something else)",
    )
    assert db.read_bytes() == before


def test_a_store_from_a_newer_logphase_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with sqlite3.connect(db) as newer:
        newer.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        newer.execute("PRAGMA user_version = 99")
        newer.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY)")
    with pytest.raises(StoreError) as raised:
        RunStore.open(db, create=False)
    assert raised.value.message == f"{db}: the run store has schema 99, this logphase knows up to 1"


def test_an_empty_file_becomes_a_store_at_the_current_schema(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    db.touch()
    with RunStore.open(db, create=False) as store:
        assert store.all() == []
    with sqlite3.connect(db) as check:
        header = (
            check.execute("PRAGMA application_id").fetchone()[0],
            check.execute("PRAGMA user_version").fetchone()[0],
        )
        mode = check.execute("PRAGMA journal_mode").fetchone()[0]
    assert (header, mode) == ((APPLICATION_ID, 1), "wal")
