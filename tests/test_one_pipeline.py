"""Every fixture log judged four ways — analyze plain, with --baseline, with --record, and watch's final
report — gives the same verdict, phases, root cause, stacks and flight-recorder sections (one pipeline)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from logphase import pipeline
from logphase.baselines.fingerprint import LogIdentity, combine_digests
from logphase.flight_recorder import judge_dumps, read_dumps
from logphase.logs.reader import open_sources, read_lines
from logphase.packs import PackSet
from logphase.report.model import InputSummary
from logphase.watch.ingest import Ingest
from tests.conftest import FIXTURES, run_cli, run_json
from tests.equivalence.sampling import FULL, rng

AS_OF_TEXT = "2026-06-01 12:00:00"
AS_OF = datetime(2026, 6, 1, 12, 0, 0)
LOGS = sorted(
    [
        *(FIXTURES / "logs").glob("*/*.log"),
        *(FIXTURES / "real").glob("**/*.log"),
        *(FIXTURES / "stacks").glob("*.log"),  # faulthandler / py-spy dumps printed into logs
        *(FIXTURES / "realworld").glob("*/*.log"),  # pasted from issues and forums
    ]
)
BASELINES = (FIXTURES / "logs" / "sglang" / "tp8-ready-serving.log", FIXTURES / "logs" / "vllm" / "v0-tp2-ready.log")
# What the report says about the run itself; inputs, as_of and the baseline comparison differ by design.
SECTIONS = (
    "system",
    "version",
    "ranks",
    "phase",
    "furthest_phase",
    "verdict",
    "reason",
    "culprit_ranks",
    "root_cause",
    "phases",
    "rank_states",
    "last_line",
    "silence_s",
    "budget_s",
    "stacks",
    "flight_recorder",
    "notes",
)


def flight_dumps(log: Path) -> list[Path]:
    """The torch flight-recorder dumps taken with a log: `<log stem>-fr-rank-N` beside it, or a
    capture's `fr/fr-rank-N` folder (for each of its logs)."""
    return sorted([*log.parent.glob(f"{log.stem}-fr-rank-*"), *log.parent.glob("fr/fr-rank-*")])


def analyzed(log: Path, *extra: str) -> dict[str, Any]:
    dumps = [str(dump) for dump in flight_dumps(log)]
    _, report = run_json("analyze", str(log), *dumps, "--post-mortem", "--as-of", AS_OF_TEXT, *extra)
    return report


def watched(log: Path, packs: PackSet) -> dict[str, Any]:
    """watch's final report: an Ingest fed the whole file in one batch (a log caught up on), then ended."""
    ingest = Ingest(packs, reference=AS_OF, name=str(log))
    source = open_sources([str(log)], packs=packs)[0]
    lines = list(read_lines(source))
    for note in source.envelopes.notes(source.name) if source.envelopes else ():
        ingest.note(note)  # as watch's follower says what it unwrapped
    ingest.feed(lines, arrived=0.0)
    ingest.end()
    dumps = flight_dumps(log)
    flight = judge_dumps(read_dumps(str(dump) for dump in dumps)) if dumps else None
    options = pipeline.Options(as_of=AS_OF, post_mortem=True, flight=flight)
    timeline = ingest.timeline()
    identity = LogIdentity(
        content_hash=combine_digests(["0"]),
        head_hash=combine_digests(["0"]),
        fingerprint=ingest.fingerprint.fingerprint(timeline.system, timeline.version),
    )
    inputs = [InputSummary(str(log), ingest.lines, log.stat().st_size)]
    modified = datetime.fromtimestamp(log.stat().st_mtime)
    report, _ = pipeline.assemble(
        inputs, ingest.scan_result(), packs, options, identity=identity, last_activity=modified
    )
    return report.to_json()


def sections(report: dict[str, Any]) -> dict[str, Any]:
    return {key: report[key] for key in SECTIONS}


# The commands besides a plain analyze that must say the same about a run. Each log's plain report is
# computed once per session; each log is judged by one of the others, dealt afresh each run (the run's
# seed: tests/equivalence/sampling.py), so that every log and every command are judged each run, and
# every log with every command over runs (LOGPHASE_TEST_FULL=1: every command each run).
COMMANDS = ("baseline", "record", "watch")


def dealt_commands() -> list[tuple[Path, str]]:
    if FULL:
        return [(log, command) for log in LOGS for command in COMMANDS]
    random_ = rng("one-pipeline")
    order = [*COMMANDS] * (len(LOGS) // len(COMMANDS) + 1)
    random_.shuffle(order)
    return list(zip(LOGS, order, strict=False))


CASES = dealt_commands()
_PLAIN: dict[Path, dict[str, Any]] = {}


def analyzed_plain(log: Path) -> dict[str, Any]:
    if log not in _PLAIN:
        _PLAIN[log] = analyzed(log)
    return _PLAIN[log]


@pytest.mark.slow
@pytest.mark.parametrize(("log", "command"), CASES, ids=[f"{log.relative_to(FIXTURES)}|{c}" for log, c in CASES])
def test_analyze_baseline_record_and_watch_judge_a_log_alike(
    log: Path, command: str, packs: PackSet, tmp_path: Path
) -> None:
    # GIVEN a fixture log (with the flight-recorder dumps taken with it, if any), analysed plain
    plain = analyzed_plain(log)
    # WHEN it is analysed against another fixture log, recorded, or watched to its end
    if command == "baseline":
        baseline = BASELINES[1] if log == BASELINES[0] else BASELINES[0]
        other = analyzed(log, "--baseline", str(baseline))
        # THEN the comparison is there only when asked for
        assert (plain["baseline"], other["baseline"] is not None) == (None, True)
    elif command == "record":
        other = analyzed(log, "--record", "--db", str(tmp_path / "runs.db"))
    else:
        other = watched(log, packs)
    # THEN it says the same about the run as the plain analyze
    assert sections(other) == sections(plain)


def test_every_log_and_every_command_is_judged_each_run() -> None:
    # GIVEN this run's cases WHEN listed THEN every log and every command is among them
    assert {log for log, _ in CASES} == set(LOGS)
    assert {command for _, command in CASES} == set(COMMANDS)


def test_every_kind_of_fixture_is_a_case() -> None:
    # GIVEN the fixture folders WHEN globbed THEN golden logs, real captures, dumps in logs and flight dumps are in
    assert {path.relative_to(FIXTURES).parts[0] for path in LOGS} == {"logs", "real", "stacks", "realworld"}
    assert [dump.name for dump in flight_dumps(FIXTURES / "real" / "gpu-h200" / "nccl-watchdog-timeout.log")] == [
        "nccl-watchdog-timeout-fr-rank-0"
    ]
    assert [dump.name for dump in flight_dumps(FIXTURES / "real" / "gpu-h200x2" / "rank0.log")] == [
        "fr-rank-0",
        "fr-rank-1",
    ]


@pytest.mark.parametrize("name", ["sglang/eagle3-tp8-hung-cuda-graph-247.log", "vllm/v1-085-tp4-ready-serving.log"])
def test_watch_records_the_run_runs_add_records(name: str, tmp_path: Path) -> None:
    # GIVEN a finished log, once piped into `watch --record` and once given to `runs add`
    log = FIXTURES / "logs" / name
    watched_db, added_db = tmp_path / "watched.db", tmp_path / "added.db"
    watch = run_cli("watch", "-", "--record", "--db", str(watched_db), input=log.read_bytes())
    add = run_cli("runs", "add", str(log), "--db", str(added_db))
    # WHEN both stores show their one run
    shown = [
        json.loads(run_cli("runs", "show", "1", "--db", str(db), "--format", "json").stdout)
        for db in (watched_db, added_db)
    ]
    # THEN it is the same run — outcome, phases, stop point, hashes — read from another path
    assert (watch.stderr.splitlines()[-1], add.stderr.splitlines()[-1]) == (add.stderr.strip(), add.stderr.strip())
    assert [run.pop("paths") for run in shown] == [["<stdin>"], [str(log)]]
    for run in shown:
        run.pop("recorded_at")  # the second it was recorded in
    assert shown[0] == shown[1]
