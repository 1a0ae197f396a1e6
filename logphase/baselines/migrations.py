"""The run store's schema, step by step: each step is fixed SQL text that is never edited once released.

A store at schema version N (SQLite's `user_version`) runs STEPS[N:] in one transaction and ends at
SCHEMA_VERSION = len(STEPS). A released step has created real stores, so changing its text would give
stores made before and after the change different schemas under the same version number; its text is
frozen, and tests/baselines/test_migrations.py compares each step with the copy committed next to it.

To change the schema, append a step. For example, a new `Fingerprint` field `cuda_version` (the store
keeps one column per field, named after it, INTEGER for `*_size` / `*_count`, else TEXT) is:

    # 1 → 2
    ("ALTER TABLE runs ADD COLUMN cuda_version TEXT",),

and a copy of that text committed as tests/baselines/migrations/step-2.sql. Runs recorded before the
step read the new field as None (unknown), which `Fingerprint` already means."""

from __future__ import annotations

# One tuple of statements per step; STEPS[n] takes a store from version n to n + 1.
STEPS: tuple[tuple[str, ...], ...] = (
    # 0 → 1: runs (fingerprint columns as `Fingerprint` had them in schema 1) and their phases
    (
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            content_hash TEXT NOT NULL UNIQUE,
            head_hash TEXT NOT NULL,
            paths TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            fingerprint_key TEXT NOT NULL,
            system TEXT, version TEXT, model_path TEXT, tp_size INTEGER, pp_size INTEGER, dp_size INTEGER, """
        """ep_size INTEGER, speculative_algorithm TEXT, draft_model_path TEXT, gpu_name TEXT, gpu_count INTEGER, """
        """nccl_version TEXT,
            verdict TEXT NOT NULL,
            label TEXT,
            lines INTEGER NOT NULL,
            stop_phase TEXT,
            stop_ended INTEGER NOT NULL,
            stop_draft_after INTEGER NOT NULL,
            stop_line INTEGER NOT NULL,
            last_text TEXT NOT NULL,
            started TEXT,
            ready_s REAL
        )""",
        "CREATE INDEX runs_by_fingerprint ON runs (fingerprint_key)",
        """CREATE TABLE phases (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            phase TEXT NOT NULL,
            start_s REAL,
            seconds REAL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            ended INTEGER NOT NULL,
            PRIMARY KEY (run_id, phase)
        )""",
    ),
)

SCHEMA_VERSION = len(STEPS)
