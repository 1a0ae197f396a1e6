"""The run store's edges: a path that is no regular file, a lock held by another process, values SQLite
cannot hold, a command that fails part-way (records nothing), and many writers killed at random."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from logphase.baselines.fingerprint import Fingerprint
from logphase.baselines.records import PhaseRecord, RunRecord, StopPoint
from logphase.baselines.store import INT64, RunStore, storable
from logphase.phases import Phase, Verdict
from tests.conftest import FIXTURES, REPO, run_cli

LOG = FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log"
NOW = datetime(2026, 4, 21, 9, 30)


def _log(folder: Path, name: str, extra: str = "", *, replace_text: tuple[str, str] = ("", "")) -> str:
    text = LOG.read_text()
    if replace_text[0]:
        assert replace_text[0] in text
        text = text.replace(*replace_text)
    path = folder / name
    path.write_text(text + extra)
    return str(path)


def _count(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return int(connection.execute("SELECT count(*) FROM runs").fetchone()[0])


@pytest.mark.parametrize("device", [os.devnull, "/dev/zero"])
@pytest.mark.parametrize("command", [["runs", "list"], ["runs", "add", "LOG"], ["analyze", "LOG", "--record"]])
def test_a_store_path_that_is_a_device_is_refused_and_nothing_is_written_beside_it(
    tmp_path: Path, device: str, command: list[str]
) -> None:
    # GIVEN --db naming a character device, directly or through a symlink in a writable folder
    log = _log(tmp_path, "run.log")
    (tmp_path / "runs.db").symlink_to(device)
    for db in (device, str(tmp_path / "runs.db")):
        # WHEN a command opens the store
        result = run_cli(*[log if arg == "LOG" else arg for arg in command], "--db", db)
        # THEN exit 3 with the reason, and no journal or WAL file appears beside it
        assert result.exit_code == 3, result.output
        assert "not a regular file" in result.stderr
        assert "hint: point --db or LOGPHASE_DB at a file" in result.stderr
    assert not Path(f"{device}-journal").exists() and not Path(f"{device}-wal").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.log", "runs.db"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into any folder")
def test_a_new_store_in_a_folder_that_is_not_writable_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        result = run_cli("runs", "add", _log(tmp_path, "run.log"), "--db", str(folder / "runs.db"))
    finally:
        folder.chmod(0o700)
    assert result.exit_code == 3, result.output
    assert "not writable" in result.stderr


def _record(content_hash: str, phases: tuple[PhaseRecord, ...] = ()) -> RunRecord:
    return RunRecord(
        fingerprint=Fingerprint(system="sglang", model_path="m", tp_size=8),
        verdict=Verdict.READY,
        phases=phases,
        lines=10,
        stop=StopPoint(Phase.READY, True, 10),
        last_text="ready",
        paths=(f"{content_hash}.log",),
        content_hash=content_hash,
        head_hash=content_hash,
        started=None,
        ready_s=1.0,
    )


def test_values_sqlite_cannot_hold_are_made_unknown_before_the_store() -> None:
    # GIVEN a run whose log claimed absurd numbers (a 10**30 TP size, a NaN time, a line past 64 bits)
    run = RunRecord(
        fingerprint=Fingerprint(system="sglang", model_path="m\udcff", tp_size=10**30, gpu_count=-(2**64)),
        verdict=Verdict.READY,
        phases=(PhaseRecord(Phase.WEIGHT_LOAD, float("nan"), float("inf"), 1, 2**70, True),),
        lines=2**80,
        stop=StopPoint(Phase.READY, True, 2**64),
        last_text="x",
        paths=("a.log",),
        content_hash="c",
        head_hash="h",
        started=None,
        ready_s=float("-inf"),
    )
    # WHEN made storable
    stored = storable(run)
    # THEN each is unknown or clamped to what SQLite holds; a lone surrogate is replaced
    assert (stored.fingerprint.tp_size, stored.fingerprint.gpu_count) == (None, None)
    assert stored.fingerprint.model_path == "m?"
    assert stored.phases[0].start_s is None and stored.phases[0].seconds is None
    assert stored.phases[0].end_line == INT64[1]
    assert (stored.lines, stored.stop.line, stored.ready_s) == (INT64[1], INT64[1], None)
    # AND the fingerprint's key says what the store holds
    assert "1000000000000000000000000000000" not in stored.fingerprint.key


def test_runs_add_with_an_out_of_range_number_records_every_run(tmp_path: Path) -> None:
    # GIVEN three logs, the third's server args holding a TP size beyond 64 bits
    logs = [
        _log(tmp_path, "a.log", "a\n"),
        _log(tmp_path, "b.log", "b\n"),
        _log(tmp_path, "c.log", replace_text=("tp_size=8", f"tp_size={10**30}")),
    ]
    db = tmp_path / "runs.db"
    # WHEN recorded THEN all three are, the third's TP size unknown, and no traceback
    result = run_cli("runs", "add", *logs, "--db", str(db))
    assert result.exit_code == 0, result.output
    assert _count(db) == 3
    assert str(10**30) not in result.stderr


def test_a_run_the_store_refuses_records_none_of_the_batch(tmp_path: Path) -> None:
    # GIVEN a batch of three runs whose third breaks a constraint of the store (a phase twice)
    db = tmp_path / "runs.db"
    good = [_record(f"c{n}") for n in range(2)]
    phase = PhaseRecord(Phase.WEIGHT_LOAD, 0.0, 1.0, 1, 2, True)
    bad = _record("c3", (phase, phase))
    with RunStore.open(db, create=True) as store:
        # WHEN recorded together THEN the error is the store's, and nothing was recorded
        with pytest.raises(Exception) as raised:
            store.add_all([*good, bad], recorded_at=NOW)
        assert getattr(raised.value, "exit_code", None) == 3
        assert store.all() == []
        # AND the store takes the good ones afterwards
        assert [created for _, created in store.add_all(good, recorded_at=NOW)] == [True, True]


def test_runs_add_of_a_missing_third_log_records_nothing(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    result = run_cli(
        "runs", "add", _log(tmp_path, "a.log"), _log(tmp_path, "b.log", "b\n"), "nope.log", "--db", str(db)
    )
    assert result.exit_code == 3
    assert not db.exists() or _count(db) == 0


_HOLDER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
time.sleep(60)
"""


def test_a_held_lock_is_waited_for_as_long_as_lock_timeout_then_named(tmp_path: Path) -> None:
    # GIVEN a store, and another process holding its write lock
    db = tmp_path / "runs.db"
    log = _log(tmp_path, "a.log")
    assert run_cli("runs", "add", log, "--db", str(db)).exit_code == 0
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        # WHEN a run is recorded with --lock-timeout 0.5
        result = run_cli("runs", "add", _log(tmp_path, "b.log", "b\n"), "--db", str(db), "--lock-timeout", "0.5")
        # THEN it gives up: exit 3, the wait said, the holder named (Linux says it in /proc/locks)
        assert result.exit_code == 3, result.output
        assert "the run store stayed locked for 0.5s" in result.stderr
        assert f"held by pid {holder.pid}" in result.stderr
        assert "hint: wait for it and try again, or wait longer with --lock-timeout SECONDS" in result.stderr
        # AND reading does not wait (WAL: readers pass a writer)
        assert run_cli("runs", "list", "--db", str(db), "--lock-timeout", "0.5").exit_code == 0
    finally:
        holder.kill()
        holder.wait()
    assert _count(db) == 1


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e9", "abc"])
def test_lock_timeout_is_bounded(tmp_path: Path, value: str) -> None:
    result = run_cli("runs", "list", "--db", str(tmp_path / "runs.db"), "--lock-timeout", value)
    assert result.exit_code == 2
    assert "Invalid value for '--lock-timeout'" in result.stderr


# --- concurrent writers ------------------------------------------------------------------------

WRITERS = 16


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_concurrent_writers_killed_at_random_never_lose_or_double_a_row(tmp_path: Path, seed: int) -> None:
    # GIVEN 16 distinct logs, each recorded by its own process into one store (runs add, analyze
    # --record, watch --record of a log that is ready)
    rng = random.Random(seed)
    db = tmp_path / "runs.db"
    logs = [_log(tmp_path, f"w{n}.log", f"writer {n}\n") for n in range(WRITERS)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOGPHASE_NO_CACHE": "1"}
    processes = []
    for n, log in enumerate(logs):
        command = [
            ["runs", "add", log],
            ["analyze", log, "--record", "--format", "json"],
            ["watch", log, "--record", "--timeout", "60"],
        ][n % 3]
        args = [sys.executable, "-m", "logphase", *command, "--db", str(db)]
        processes.append(subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    # WHEN a random third of them is killed at random moments (SIGKILL: mid-import, mid-analysis, mid-write)
    doomed = set(rng.sample(range(WRITERS), WRITERS // 3))
    started = time.monotonic()
    for n in sorted(doomed, key=lambda _: rng.random()):
        time.sleep(max(0.0, rng.uniform(0, 8) - (time.monotonic() - started)))
        processes[n].send_signal(signal.SIGKILL)
    codes = [process.wait(timeout=240) for process in processes]
    errors = [process.stderr.read().decode() if process.stderr else "" for process in processes]
    # THEN every writer that finished did so cleanly
    finished = [n for n, code in enumerate(codes) if code != -signal.SIGKILL]
    assert [(n, codes[n], errors[n][-300:]) for n in finished if codes[n] not in (0,)] == []
    # AND the store is whole, each finished writer's run is in it once, a killed one's once or not at all
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        rows = connection.execute("SELECT paths, count(*) FROM runs GROUP BY paths").fetchall()
        orphans = connection.execute("SELECT count(*) FROM phases WHERE run_id NOT IN (SELECT id FROM runs)")
        assert orphans.fetchone()[0] == 0
        empty = connection.execute("SELECT count(*) FROM runs WHERE id NOT IN (SELECT run_id FROM phases)")
        assert empty.fetchone()[0] == 0  # a run is recorded with its phases, or not at all
    counts = {Path(json.loads(paths)[0]).name: count for paths, count in rows}
    assert all(count == 1 for count in counts.values()), counts
    assert {f"w{n}.log" for n in finished} <= set(counts)
    assert set(counts) <= {f"w{n}.log" for n in range(WRITERS)}
