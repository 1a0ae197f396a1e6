"""The ETA and overdue at every point of a run: a real log recorded 0.8×–1.3× as fast, its 1.0× copy cut
at a line and analysed live against them (issue 16)."""

from __future__ import annotations

import json
import os
import random
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from logphase.baselines.stats import OVERDUE_FACTOR, OVERDUE_FLOOR_S
from tests.baselines.scaled_runs import docker_logs_t, line_times, scaled
from tests.conftest import FIXTURES, run_cli

SCALES = (0.8, 0.9, 1.1, 1.2, 1.3)  # the recorded runs; the one analysed live is the 1.0× copy
# The ETA may miss the recorded runs' remaining times by this much: within a phase it takes each run's
# time in the phase less the time this run spent in it, which for a run 1.3× as slow is off by 0.3 × that.
TOLERANCE_S = 5.0
# Cut at every line with LOGPHASE_ETA_EVERY_LINE=1 (a few minutes); the suite cuts where a phase begins
# or ends, plus a seeded sample of the other lines.
EVERY_LINE = os.environ.get("LOGPHASE_ETA_EVERY_LINE") == "1"
SAMPLE = 6


@dataclass(frozen=True)
class Setup:
    name: str
    log: Path
    ready_text: str  # the line that says the server is ready (shared/reference)
    as_of_year: int  # what year-less stamps are dated in


SETUPS = (
    Setup("sglang-tp4", FIXTURES / "logs/sglang/k8s-cri-prefixed-ready.log", "The server is fired up", 2025),
    # SGLang TP8 with an EAGLE3 draft model (0.5.10: the draft's block after the target's graphs)
    Setup("sglang-tp8-eagle3", FIXTURES / "logs/sglang/eagle3-tp8-ready.log", "The server is fired up", 2026),
    # and a 0.5.15 TP2 one, whose draft work interleaves with the target's
    Setup(
        "sglang-eagle3-0515", FIXTURES / "logs/sglang/eagle3-0515-interleaved-ready.log", "The server is fired up", 2026
    ),
    Setup("vllm-v1-tp4", FIXTURES / "logs/vllm/v1-085-tp4-ready-serving.log", "Application startup complete.", 2025),
)


@dataclass(frozen=True)
class Recorded:
    setup: Setup
    db: Path
    live: str  # the 1.0× copy, as the analysed run writes it
    times: list[datetime | None]  # per physical line of the 1.0× copy
    ready_at: datetime
    cuts: list[int]  # 1-based line numbers to cut after


def _dated(moment: datetime, year: int) -> datetime:
    return moment.replace(year=year) if moment.year == 2000 else moment


def _analyze(db: Path, log: Path, as_of: datetime) -> dict[str, Any]:
    stamp = as_of.strftime("%Y-%m-%d %H:%M:%S.%f")
    result = run_cli(
        "analyze", "--live", "--as-of", stamp, "--db", str(db), str(log), "--baseline", "auto", "--format", "json"
    )
    report: dict[str, Any] = json.loads(result.stdout)
    return report


@pytest.fixture(
    scope="module",
    params=[(s, w) for s in SETUPS for w in (False, True)],
    ids=lambda p: p[0].name + ("-docker-logs-t" if p[1] else ""),
)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """GIVEN five runs of one setup recorded, 0.8× to 1.3× the real log's times (plain or as `docker logs -t`
    gives them: each line behind its RFC 3339 time)."""
    setup, wrapped = request.param
    folder = tmp_path_factory.mktemp(setup.name)
    original = setup.log.read_bytes().decode("utf-8")

    def wrap(text: str) -> str:
        return docker_logs_t(text, setup.as_of_year) if wrapped else text

    logs = []
    for factor in SCALES:
        path = folder / f"run-{factor}.log"
        path.write_text(wrap(scaled(original, factor)), encoding="utf-8", newline="")
        logs.append(str(path))
    db = folder / "runs.db"
    as_of = f"{setup.as_of_year}-12-31 00:00:00"
    assert run_cli("runs", "add", *logs, "--db", str(db), "--as-of", as_of).exit_code == 0
    lines = original.split("\n")
    times = [None if t is None else _dated(t, setup.as_of_year) for t in line_times(original)]
    ready_line = next(i for i, line in enumerate(lines) if setup.ready_text in line)
    ready_at = times[ready_line]
    assert ready_at is not None
    stamped = [i + 1 for i in range(ready_line) if times[i] is not None]
    if EVERY_LINE:
        cuts = stamped
    else:
        # where a phase begins or ends in the full run (the tool's spans), plus a seeded sample
        full = _analyze(db, setup.log, ready_at)
        edges = {row[key] for row in full["phases"] for key in ("start_line", "end_line")}
        sample = random.Random(16).sample(stamped, min(SAMPLE, len(stamped)))
        cuts = sorted({cut for cut in (*edges, *sample) if cut in stamped})
    return Recorded(setup, db, wrap(original), times, ready_at, cuts)


def _cut(recorded: Recorded, line: int, folder: Path) -> Path:
    path = folder / f"cut-{line}.log"
    newline = "\r\n" if "\r\n" in recorded.live else "\n"
    path.write_text(newline.join(recorded.live.split(newline)[:line]) + newline, encoding="utf-8", newline="")
    return path


@pytest.mark.slow
def test_eta_lies_within_the_recorded_runs_remaining_times_and_is_never_overdue(
    recorded: Recorded, tmp_path: Path
) -> None:
    errors: list[float] = []
    typical: list[float] = []
    for line in recorded.cuts:
        now = recorded.times[line - 1]
        assert now is not None
        # WHEN the 1.0× run, cut after this line, is analysed live as of that line's time
        report = _analyze(recorded.db, _cut(recorded, line, tmp_path), now)
        baseline = report["baseline"]
        left = (recorded.ready_at - now).total_seconds()
        # THEN it is never overdue
        assert baseline["overdue"] is False, (line, baseline["summary"])
        if report["verdict"] == "ready" or baseline["eta_s"] is None:
            assert report["verdict"] == "ready" or baseline["this_point"]["phase"] in (
                None,
                "launch",
                "ready",
                "serving",
            ), (line, baseline)
            continue
        # AND the ETA lies within what the recorded runs still needed from the same point
        low, high = min(SCALES) * left - TOLERANCE_S, max(SCALES) * left + TOLERANCE_S
        assert low <= baseline["eta_s"] <= high, (line, left, baseline["summary"])
        assert (baseline["runs_used"], baseline["eta_rough"]) == (len(SCALES), False)
        errors.append(abs(baseline["eta_s"] - left))
        typical.append(abs(baseline["eta_s"] - statistics.median(SCALES) * left))
    assert errors
    # the figures for the report: how far the ETA was from this run's own time left, and from the
    # median recorded run's (1.1×: the recorded runs are slower than this one by 10 % at the median)
    print(
        f"\n{recorded.setup.name}: {len(errors)} cuts, ETA error median {statistics.median(errors):.1f}s, "
        f"worst {max(errors):.1f}s; against the median run's time left: median "
        f"{statistics.median(typical):.1f}s, worst {max(typical):.1f}s"
    )


@pytest.mark.slow
def test_cut_and_left_silent_for_ten_p90_and_the_floor_it_is_overdue(recorded: Recorded, tmp_path: Path) -> None:
    checked = 0
    for line in recorded.cuts[:: max(1, len(recorded.cuts) // 4)]:
        now = recorded.times[line - 1]
        assert now is not None
        log = _cut(recorded, line, tmp_path)
        baseline = _analyze(recorded.db, log, now)["baseline"]
        phase = baseline["this_point"]["phase"]
        row = next((row for row in baseline["phases"] if row["phase"] == phase), None)
        if row is None or row["p90"] is None:
            continue
        # WHEN nothing more comes for 10 × p90 + the floor (p90 + 60 s), and a second
        silent = OVERDUE_FACTOR * row["p90"] + OVERDUE_FLOOR_S + row["p90"] + 1
        later = _analyze(recorded.db, log, now + timedelta(seconds=silent))["baseline"]
        # THEN it is overdue, and the words say which tests held
        assert later["overdue"] is True, (line, later["summary"])
        assert "overdue: " in later["summary"] and f"past {OVERDUE_FACTOR:g} × its p90" in later["summary"]
        checked += 1
    assert checked >= 3
