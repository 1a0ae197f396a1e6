CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            content_hash TEXT NOT NULL UNIQUE,
            head_hash TEXT NOT NULL,
            paths TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            fingerprint_key TEXT NOT NULL,
            system TEXT, version TEXT, model_path TEXT, tp_size INTEGER, pp_size INTEGER, dp_size INTEGER, ep_size INTEGER, speculative_algorithm TEXT, draft_model_path TEXT, gpu_name TEXT, gpu_count INTEGER, nccl_version TEXT,
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
        );

CREATE INDEX runs_by_fingerprint ON runs (fingerprint_key);

CREATE TABLE phases (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            phase TEXT NOT NULL,
            start_s REAL,
            seconds REAL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            ended INTEGER NOT NULL,
            PRIMARY KEY (run_id, phase)
        );
