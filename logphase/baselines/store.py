"""Recorded runs in one SQLite file (the run store): open, migrate, add, read, remove; safe for many processes."""

from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from logphase.baselines.fingerprint import Fingerprint
from logphase.baselines.migrations import SCHEMA_VERSION, STEPS
from logphase.baselines.records import PhaseRecord, RunRecord, StopPoint, in_start_order
from logphase.errors import StoreError
from logphase.phases import Phase, Verdict

APPLICATION_ID = 0x6C706873  # "lphs": marks a SQLite file as a logphase run store
# How long a command waits for another process's lock on the store (`--lock-timeout`), in all:
# SQLite's busy timeout, then retries of what fails at once (a lock upgrade that would deadlock).
LOCK_TIMEOUT_S = 5.0
# What SQLite stores as INTEGER: a larger number is no size or line number a log can mean.
INT64 = (-(1 << 63), (1 << 63) - 1)

# One column per Fingerprint field, named after it. A field added to Fingerprint needs its column
# added by a new step in migrations.py (never by editing a released step).
_FINGERPRINT_COLUMNS = tuple(field.name for field in fields(Fingerprint))
_PHASE_NAMES = frozenset(phase.value for phase in Phase)

T = TypeVar("T")


@dataclass(frozen=True)
class RunFilter:
    """Which runs `runs list` shows: each given field must hold (words compared without case); `limit`: the
    newest that many."""

    outcome: str | None = None  # the verdict or the label: `stalled` and `hung` both find a labelled stalled run
    label: str | None = None
    system: str | None = None
    model: str | None = None  # a part of the model's path: `qwen3` finds Qwen/Qwen3-32B
    limit: int | None = None

    def sql(self) -> tuple[str, tuple[Any, ...]]:
        """The WHERE clause and its parameters (values are bound, never spliced in)."""
        tests: list[str] = []
        values: list[Any] = []
        if self.outcome is not None:
            tests.append("(lower(verdict) = lower(?) OR lower(coalesce(label, '')) = lower(?))")
            values += [self.outcome, self.outcome]
        if self.label is not None:
            tests.append("lower(coalesce(label, '')) = lower(?)")
            values.append(self.label)
        if self.system is not None:
            tests.append("lower(coalesce(system, '')) = lower(?)")
            values.append(self.system)
        if self.model is not None:
            # instr, not LIKE: a `_` or `%` in a model name is itself
            tests.append("instr(lower(coalesce(model_path, '')), lower(?)) > 0")
            values.append(self.model)
        return ("WHERE " + " AND ".join(tests) if tests else ""), tuple(values)


class RunStore:
    """Recorded runs in one SQLite file. Safe for many processes at once (WAL, a busy timeout and
    retries); a file that is not a logphase store, or is damaged, is reported and never written."""

    def __init__(self, path: Path, connection: sqlite3.Connection, lock_timeout_s: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self._db = connection
        self.lock_timeout_s = lock_timeout_s
        self.unreadable: list[str] = []  # what the last read left out, and why

    @classmethod
    def open(cls, path: Path, *, create: bool, lock_timeout_s: float | None = None) -> RunStore:
        """The store at `path`: a regular file, or (`create`) a new one in a writable folder; never a
        device, a pipe or a folder (SQLite would write its journal beside it). Locks held by other
        processes are waited for `lock_timeout_s` (default LOCK_TIMEOUT_S) in all."""
        lock_timeout_s = LOCK_TIMEOUT_S if lock_timeout_s is None else lock_timeout_s
        if path.is_dir():
            raise StoreError(
                f"{path}: is a directory, not a run store", hint="point --db or LOGPHASE_DB at a file, e.g. runs.db"
            )
        if path.exists() and not path.is_file():
            raise StoreError(
                f"{path}: not a regular file (a device, a pipe or a socket), so not a run store",
                hint="point --db or LOGPHASE_DB at a file, e.g. runs.db",
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
            if not os.access(path.parent, os.W_OK | os.X_OK):
                raise StoreError(
                    f"{path.parent}: not writable, so no run store can be made there",
                    hint="use --db to put the store somewhere writable",
                )
        try:
            connection = sqlite3.connect(str(path), timeout=lock_timeout_s, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(
                f"{path}: cannot open the run store: {exc}", hint="check the path and its permissions, or use --db"
            ) from None
        store = cls(path, connection, lock_timeout_s)
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
        db.execute(f"PRAGMA busy_timeout = {int(self.lock_timeout_s * 1000)}")

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
        once instead, so those are retried with a jittered backoff, all within the lock timeout."""
        deadline = time.monotonic() + self.lock_timeout_s
        attempt = 0
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                left = deadline - time.monotonic()
                if ("locked" in text or "busy" in text) and left > 0:
                    time.sleep(min(left, 0.02 * 2 ** min(attempt, 6) * (1 + random.random())))
                    attempt += 1
                    continue
                raise self._store_error(exc) from None
            except sqlite3.DatabaseError as exc:
                raise self._store_error(exc) from None

    def _store_error(self, exc: sqlite3.Error) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            holder = lock_holder(self.path)
            return StoreError(
                f"{self.path}: the run store stayed locked for {self.lock_timeout_s:g}s"
                + (f" (held by {holder})" if holder else " by another process"),
                hint="wait for it and try again, or wait longer with --lock-timeout SECONDS",
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
        return self.add_all([run], recorded_at=recorded_at)[0]

    def add_all(self, runs: Sequence[RunRecord], *, recorded_at: datetime) -> list[tuple[int, bool]]:
        """Record runs in one transaction: all of them, or (on any error) none."""
        ready = [storable(replace(run, recorded_at=recorded_at)) for run in runs]
        return self._retry(lambda: self._add_all(ready))

    def _add_all(self, runs: Sequence[RunRecord]) -> list[tuple[int, bool]]:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            added = [self._add(run) for run in runs]
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return added

    def _add(self, run: RunRecord) -> tuple[int, bool]:
        db = self._db
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
            [(run_id, p.phase.value, p.start_s, p.seconds, p.start_line, p.end_line, int(p.ended)) for p in run.phases],
        )
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

    def listed(self, chosen: RunFilter = RunFilter()) -> list[RunRecord]:
        """The runs `chosen` names, newest first (by when they were recorded, then by id)."""
        where, parameters = chosen.sql()
        order = "recorded_at DESC, id DESC"
        limit = f" LIMIT {int(chosen.limit)}" if chosen.limit is not None else ""
        return self._retry(lambda: self._select(where, parameters, order=order + limit))

    def matching(self, fingerprint_key: str) -> list[RunRecord]:
        return self._retry(lambda: self._select("WHERE fingerprint_key = ?", (fingerprint_key,)))

    def _select(self, where: str, parameters: tuple[Any, ...], *, order: str = "id") -> list[RunRecord]:
        """The runs that match; a row this version cannot read (a phase or verdict that a newer
        logphase wrote, a damaged value) is left out and said in `unreadable`, never a traceback."""
        db = self._db
        db.execute("BEGIN")
        try:
            cursor = db.execute(f"SELECT * FROM runs {where} ORDER BY {order}", parameters)
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


def storable(run: RunRecord) -> RunRecord:
    """`run` with what SQLite cannot hold made what the store means by it: a count or size beyond
    64 bits (no log means one: `tp_size=10**30`) unknown, a line number clamped, a NaN or infinite
    time unknown, text that UTF-8 cannot hold (lone surrogates) replaced."""
    changes: dict[str, Any] = {
        name: _text(value) if isinstance(value, str) else _int_or_none(value)
        for name in _FINGERPRINT_COLUMNS
        if (value := getattr(run.fingerprint, name)) is not None
    }
    fingerprint = replace(run.fingerprint, **changes)
    phases = tuple(
        replace(
            p,
            start_s=_finite(p.start_s),
            seconds=_finite(p.seconds),
            start_line=_clamped(p.start_line),
            end_line=_clamped(p.end_line),
        )
        for p in run.phases
    )
    return replace(
        run,
        fingerprint=fingerprint,
        phases=phases,
        lines=_clamped(run.lines),
        stop=replace(run.stop, line=_clamped(run.stop.line)),
        last_text=_text(run.last_text),
        paths=tuple(_text(path) for path in run.paths),
        label=_text(run.label) if run.label is not None else None,
        ready_s=_finite(run.ready_s),
    )


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and INT64[0] <= value <= INT64[1] else None


def _clamped(value: int) -> int:
    return min(max(value, INT64[0]), INT64[1])


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _text(value: str) -> str:
    return value.encode("utf-8", "replace").decode("utf-8")


def lock_holder(path: Path) -> str | None:
    """The process holding a lock on the store or its WAL index, where Linux says (/proc/locks):
    `pid 1234 (python -m logphase …)`; None elsewhere, or when no holder is found."""
    inodes = set()
    for candidate in (path, path.with_name(path.name + "-shm")):
        try:
            inodes.add(candidate.stat().st_ino)
        except OSError:
            continue
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    me = os.getpid()
    for entry in table.splitlines():
        fields_ = entry.split()
        # `1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF`; a blocked waiter's line has `->` after the number
        if "->" in fields_ or len(fields_) < 6:
            continue
        pid, inode = fields_[4], fields_[5].rsplit(":", 1)[-1]
        if not pid.isdigit() or int(pid) == me or not inode.isdigit() or int(inode) not in inodes:
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            command = ""
        return f"pid {pid}" + (f" ({command[:80]})" if command else "")
    return None
