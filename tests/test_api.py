"""The library's door (logphase/api.py): the same answer as the CLI, from Python, without the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import logphase
from logphase.errors import ExitCode
from logphase.phases import Phase, Verdict
from tests.conftest import FIXTURES, run_json

DEMO = FIXTURES / "logs" / "sglang" / "eagle3-tp8-warmup-health-503.log"


def test_analyze_gives_the_report_the_cli_prints() -> None:
    # GIVEN the demo log, as `logphase analyze --post-mortem --as-of T` reads it
    as_of = datetime(2030, 1, 1)
    code, printed = run_json("analyze", "--post-mortem", "--as-of", "2030-01-01 00:00:00", str(DEMO))
    # WHEN analysed through the library
    report = logphase.analyze([DEMO], post_mortem=True, as_of=as_of)
    # THEN it is the same report, with the same exit code
    assert report.to_json() == printed
    assert int(report.exit_code) == code


def test_analyze_takes_stall_after_as_the_cli_does(tmp_path: Path) -> None:
    # GIVEN a live log whose last progress is 60 s before the time it is judged at
    log = tmp_path / "server.log"
    log.write_text(
        "[2025-06-01 10:00:00 TP0] Init torch distributed begin.\n"
        "[2025-06-01 10:00:21 TP0] Load weight begin. avail mem=78.00 GB\n"
    )
    # WHEN judged live with a 30 s budget for every phase
    report = logphase.analyze([log], post_mortem=False, as_of=datetime(2025, 6, 1, 10, 1, 21), stall_after_s=30)
    # THEN it is stalled in weight_load, past that budget
    assert (report.verdict, report.phase, report.budget_s, report.exit_code) == (
        Verdict.STALLED,
        Phase.WEIGHT_LOAD,
        30.0,
        ExitCode.PROBLEM,
    )


def test_importing_logphase_loads_no_analysis() -> None:
    # GIVEN a fresh interpreter WHEN it imports logphase THEN the library's door is not opened yet
    probe = "import sys, logphase; print(json.dumps(sorted(m for m in sys.modules if m.startswith('logphase'))))"
    done = subprocess.run(
        [sys.executable, "-c", "import json; " + probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == ["logphase"]
