"""The run store's schema: released migration steps never change, and every Fingerprint field has its column."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path

from logphase.baselines.fingerprint import Fingerprint
from logphase.baselines.migrations import SCHEMA_VERSION, STEPS
from logphase.baselines.store import APPLICATION_ID, RunStore
from tests.baselines.sample_runs import HUNG, READY

COMMITTED = Path(__file__).resolve().parent / "migrations"
# SHA-256 of each released step's committed SQL: changing a released step takes changing this line on
# purpose, and the test below says why not to.
RELEASED = {1: "b1766c81e5f468fd6ffed50b7620a6c33a34db020f8233192a3480a7d8322108"}


def as_sql(statements: tuple[str, ...]) -> str:
    """A step as a SQL script: its statements in order, each ended by `;` and a blank line."""
    return "\n\n".join(f"{statement};" for statement in statements) + "\n"


def test_every_released_step_is_the_sql_committed_for_it() -> None:
    # GIVEN the SQL committed for each released step (tests/baselines/migrations/step-N.sql, N the version it makes)
    committed = {int(path.stem.removeprefix("step-")): path.read_text() for path in COMMITTED.glob("step-*.sql")}
    # WHEN the steps in migrations.py are written out as SQL scripts
    current = {number: as_sql(statements) for number, statements in enumerate(STEPS, start=1)}
    # THEN every step has its copy, and each released step is that copy, byte for byte
    assert sorted(committed) == sorted(current) == list(range(1, SCHEMA_VERSION + 1))
    for number, text in current.items():
        assert text == committed[number], (
            f"step {number - 1} → {number} was released and has made stores: do not edit it; "
            "append a new step to migrations.STEPS instead (see the module's docstring)"
        )
    for number, digest in RELEASED.items():
        assert hashlib.sha256(committed[number].encode()).hexdigest() == digest


def test_a_new_store_is_made_by_the_steps_alone(tmp_path: Path) -> None:
    # GIVEN no file
    path = tmp_path / "runs.db"
    # WHEN a store is created there
    RunStore.open(path, create=True).close()
    # THEN its tables and index are the steps' statements, and it is marked as a store of the latest schema
    with sqlite3.connect(path) as db:
        # sqlite_sequence is SQLite's own, made for AUTOINCREMENT
        schema = {row[0] for row in db.execute("SELECT sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}
        header = (
            db.execute("PRAGMA application_id").fetchone()[0],
            db.execute("PRAGMA user_version").fetchone()[0],
        )
    assert schema == {statement for step in STEPS for statement in step}
    assert header == (APPLICATION_ID, SCHEMA_VERSION)


def test_every_fingerprint_field_has_its_column(tmp_path: Path) -> None:
    # GIVEN a new store
    path = tmp_path / "runs.db"
    RunStore.open(path, create=True).close()
    # WHEN its runs table's columns are read
    with sqlite3.connect(path) as db:
        columns = {row[1]: row[2] for row in db.execute("PRAGMA table_info(runs)")}
    # THEN each Fingerprint field has a column of its name: INTEGER for sizes and counts, else TEXT
    missing = [field.name for field in fields(Fingerprint) if field.name not in columns]
    assert not missing, (
        f"Fingerprint fields {missing} have no column: add a migration step (ALTER TABLE runs ADD COLUMN)"
    )
    assert {field.name: columns[field.name] for field in fields(Fingerprint)} == {
        "system": "TEXT",
        "version": "TEXT",
        "model_path": "TEXT",
        "tp_size": "INTEGER",
        "pp_size": "INTEGER",
        "dp_size": "INTEGER",
        "ep_size": "INTEGER",
        "speculative_algorithm": "TEXT",
        "draft_model_path": "TEXT",
        "gpu_name": "TEXT",
        "gpu_count": "INTEGER",
        "nccl_version": "TEXT",
    }


def test_a_store_made_from_the_released_sql_keeps_and_gives_back_runs(tmp_path: Path) -> None:
    # GIVEN a store as an earlier logphase made it: schema 1 from its committed SQL, marked as ours
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as db:
        db.executescript((COMMITTED / "step-1.sql").read_text())
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute("PRAGMA user_version = 1")
    # WHEN this logphase records two runs in it and reads them back
    recorded_at = datetime(2026, 5, 3, 12, 0, 0)
    with RunStore.open(path, create=False) as store:
        ids = [store.add(replace(run, id=None, recorded_at=None), recorded_at=recorded_at) for run in (READY, HUNG)]
        runs = store.all()
    # THEN each run comes back as it was recorded, with its new id
    assert ids == [(1, True), (2, True)]
    assert runs == [replace(READY, id=1, recorded_at=recorded_at), replace(HUNG, id=2, recorded_at=recorded_at)]
