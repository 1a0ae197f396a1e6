"""Recorded runs in one SQLite file (the run store): open, migrate, add, read, remove; safe for many processes."""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from logphase.baselines.fingerprint import Fingerprint
from logphase.baselines.migrations import SCHEMA_VERSION, STEPS
from logphase.baselines.records import PhaseRecord, RunRecord, StopPoint, in_start_order
from logphase.errors import StoreError
from logphase.phases import Phase, Verdict

APPLICATION_ID = 0x6C706873  # "lphs": marks a SQLite file as a logphase run store
BUSY_TIMEOUT_S = 30.0
LOCK_RETRIES = 8

# One column per Fingerprint field, named after it. A field added to Fingerprint needs its column
# added by a new step in migrations.py (never by editing a released step).
_FINGERPRINT_COLUMNS = tuple(field.name for field in fields(Fingerprint))
_PHASE_NAMES = frozenset(phase.value for phase in Phase)

T = TypeVar("T")


class RunStore:
    """Recorded runs in one SQLite file. Safe for many processes at once (WAL, a busy timeout and
    retries); a file that is not a logphase store, or is damaged, is reported and never written."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection
        self.unreadable: list[str] = []  # what the last read left out, and why

    @classmethod
    def open(cls, path: Path, *, create: bool) -> RunStore:
        if path.is_dir():
            raise StoreError(
                f"{path}: is a directory, not a run store", hint="point --db or LOGPHASE_DB at a file, e.g. runs.db"
            )
        if not path.exists():
            if not create:
                raise StoreError(
                    f"no run store at {path}",
                    hint="record runs first (logphase runs add LOG, or analyze/watch --record), "
                    "or point --db / LOGPHASE_DB at the store",
                )
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create {path.parent}: {exc.strerror}", hint="use --db to put the store somewhere writable"
                ) from None
        try:
            connection = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(
                f"{path}: cannot open the run store: {exc}", hint="check the path and its permissions, or use --db"
            ) from None
        store = cls(path, connection)
        try:
            store._retry(store._prepare)
        except BaseException:
            connection.close()
            raise
        return store

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _prepare(self) -> None:
        """Check that the file is ours before anything is written to it; then migrate."""
        db = self._db
        application_id, version, objects = self._header()
        if application_id != APPLICATION_ID and (application_id != 0 or objects):
            raise StoreError(
                f"{self.path}: not a logphase run store (a SQLite database of something else)",
                hint="it was left untouched: point --db or LOGPHASE_DB at another file",
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: the run store has schema {version}, this logphase knows up to {SCHEMA_VERSION}",
                hint="upgrade logphase, or use another store with --db (the file was left untouched)",
            )
        if version < SCHEMA_VERSION:
            db.execute("BEGIN IMMEDIATE")
            try:
                application_id, version, objects = self._header()  # another process may have migrated meanwhile
                if application_id != APPLICATION_ID and (application_id != 0 or objects):
                    raise StoreError(
                        f"{self.path}: not a logphase run store", hint="it was left untouched: use another --db"
                    )
                for step in range(version, SCHEMA_VERSION):
                    for statement in STEPS[step]:
                        db.execute(statement)
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")

    def _header(self) -> tuple[int, int, int]:
        """(application id, schema version, number of tables…), read in one snapshot: read one by
        one, another process's migration could commit in between and make our store look foreign."""
        db = self._db
        own = not db.in_transaction
        if own:
            db.execute("BEGIN")
        try:
            objects = int(db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
            application_id = int(db.execute("PRAGMA application_id").fetchone()[0])
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
        finally:
            if own:
                db.execute("COMMIT")
        return application_id, version, objects

    def _retry(self, action: Callable[[], T]) -> T:
        """SQLite's busy timeout covers most contention; a lock upgrade that would deadlock fails at
        once instead, so those are retried with a jittered backoff."""
        for attempt in range(LOCK_RETRIES + 1):
            try:
                return action()
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if ("locked" in text or "busy" in text) and attempt < LOCK_RETRIES:
                    time.sleep(0.02 * 2**attempt * (1 + random.random()))
                    continue
                raise self._store_error(exc) from None
            except sqlite3.DatabaseError as exc:
                raise self._store_error(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _store_error(self, exc: sqlite3.Error) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StoreError(
                f"{self.path}: the run store stayed locked: {text}", hint="another logphase holds it; try again"
            )
        if "readonly" in text.replace(" ", "") or "read-only" in text:
            return StoreError(f"{self.path}: the run store is read-only", hint="use --db to point at a writable file")
        return StoreError(
            f"{self.path}: unreadable run store: {text}",
            hint="the file is damaged or not SQLite; it was left untouched: move it away, or use --db",
        )

    # -- writing

    def add(self, run: RunRecord, *, recorded_at: datetime) -> tuple[int, bool]:
        """Record a run → (its id, whether it is new). The same content is one run; a log that grew
        since it was recorded (same paths, same head) updates its run."""
        return self._retry(lambda: self._add(replace(run, recorded_at=recorded_at)))

    def _add(self, run: RunRecord) -> tuple[int, bool]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT id, label FROM runs WHERE content_hash = ?", (run.content_hash,)).fetchone()
            if row is None:
                row = db.execute(
                    "SELECT id, label FROM runs WHERE paths = ? AND head_hash = ? ORDER BY id DESC LIMIT 1",
                    (json.dumps(list(run.paths)), run.head_hash),
                ).fetchone()
            values = self._row_values(replace(run, label=run.label or (row[1] if row else None)))
            if row is None:
                columns = ", ".join(values)
                marks = ", ".join("?" for _ in values)
                run_id = int(
                    db.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})", tuple(values.values())).lastrowid or 0
                )
                created = True
            else:
                run_id = int(row[0])
                assignments = ", ".join(f"{column} = ?" for column in values)
                db.execute(f"UPDATE runs SET {assignments} WHERE id = ?", (*values.values(), run_id))
                db.execute("DELETE FROM phases WHERE run_id = ?", (run_id,))
                created = False
            db.executemany(
                "INSERT INTO phases (run_id, phase, start_s, seconds, start_line, end_line, ended) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (run_id, p.phase.value, p.start_s, p.seconds, p.start_line, p.end_line, int(p.ended))
                    for p in run.phases
                ],
            )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return run_id, created

    def remove(self, run_id: int) -> None:
        def action() -> int:
            return int(self._db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount)

        if self._retry(action) == 0:
            raise StoreError(f"no run {run_id} in {self.path}", hint="see the ids with: logphase runs list")

    # -- reading

    def get(self, run_id: int) -> RunRecord:
        runs = self._retry(lambda: self._select("WHERE id = ?", (run_id,)))
        if not runs and self.unreadable:
            raise StoreError(
                self.unreadable[0], hint="use the logphase that recorded it, or remove it: logphase runs rm"
            )
        if not runs:
            raise StoreError(f"no run {run_id} in {self.path}", hint="see the ids with: logphase runs list")
        return runs[0]

    def all(self) -> list[RunRecord]:
        return self._retry(lambda: self._select("", ()))

    def matching(self, fingerprint_key: str) -> list[RunRecord]:
        return self._retry(lambda: self._select("WHERE fingerprint_key = ?", (fingerprint_key,)))

    def _select(self, where: str, parameters: tuple[Any, ...]) -> list[RunRecord]:
        """The runs that match; a row this version cannot read (a phase or verdict that a newer
        logphase wrote, a damaged value) is left out and said in `unreadable`, never a traceback."""
        db = self._db
        db.execute("BEGIN")
        try:
            cursor = db.execute(f"SELECT * FROM runs {where} ORDER BY id", parameters)
            names = [column[0] for column in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            phases: dict[int, list[PhaseRecord]] = {}
            unknown: dict[int, set[str]] = {}
            ids = [row["id"] for row in rows]
            for chunk_start in range(0, len(ids), 500):
                chunk = ids[chunk_start : chunk_start + 500]
                marks = ", ".join("?" for _ in chunk)
                for run_id, phase, start_s, seconds, start_line, end_line, ended in db.execute(
                    "SELECT run_id, phase, start_s, seconds, start_line, end_line, ended FROM phases "
                    f"WHERE run_id IN ({marks})",
                    chunk,
                ):
                    if phase not in _PHASE_NAMES:
                        unknown.setdefault(run_id, set()).add(str(phase))
                        continue
                    phases.setdefault(run_id, []).append(
                        PhaseRecord(Phase(phase), start_s, seconds, start_line, end_line, bool(ended))
                    )
        finally:
            if db.in_transaction:
                db.execute("COMMIT")
        records = []
        self.unreadable = []
        for row in rows:
            try:
                records.append(self._record(row, phases.get(row["id"], [])))
            except (ValueError, TypeError, KeyError) as exc:
                self.unreadable.append(f"run {row['id']} in {self.path} cannot be read by this logphase ({exc})")
                continue
            if row["id"] in unknown:
                left_out = ", ".join(sorted(unknown[row["id"]]))
                self.unreadable.append(f"run {row['id']}: phases unknown to this logphase left out ({left_out})")
        return records

    @staticmethod
    def _row_values(run: RunRecord) -> dict[str, Any]:
        fingerprint = run.fingerprint
        return {
            "content_hash": run.content_hash,
            "head_hash": run.head_hash,
            "paths": json.dumps(list(run.paths)),
            "recorded_at": (run.recorded_at or datetime.min).isoformat(sep=" ", timespec="seconds"),
            "fingerprint_key": fingerprint.key,
            **{name: getattr(fingerprint, name) for name in _FINGERPRINT_COLUMNS},
            "verdict": run.verdict.value,
            "label": run.label,
            "lines": run.lines,
            "stop_phase": run.stop.phase.value if run.stop.phase else None,
            "stop_ended": int(run.stop.ended),
            "stop_draft_after": int(run.stop.draft_after),
            "stop_line": run.stop.line,
            "last_text": run.last_text,
            "started": run.started.isoformat(sep=" ") if run.started else None,
            "ready_s": run.ready_s,
        }

    @staticmethod
    def _record(row: Mapping[str, Any], phases: list[PhaseRecord]) -> RunRecord:
        return RunRecord(
            fingerprint=Fingerprint(**{name: row[name] for name in _FINGERPRINT_COLUMNS}),
            verdict=Verdict(row["verdict"]),
            phases=in_start_order(phases),
            lines=row["lines"],
            stop=StopPoint(
                Phase(row["stop_phase"]) if row["stop_phase"] else None,
                bool(row["stop_ended"]),
                row["stop_line"],
                bool(row["stop_draft_after"]),
            ),
            last_text=row["last_text"],
            paths=tuple(json.loads(row["paths"])),
            content_hash=row["content_hash"],
            head_hash=row["head_hash"],
            started=datetime.fromisoformat(row["started"]) if row["started"] else None,
            ready_s=row["ready_s"],
            label=row["label"],
            id=row["id"],
            recorded_at=datetime.fromisoformat(row["recorded_at"]),
        )
