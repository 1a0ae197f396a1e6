"""The baselines package stands apart from the pipeline: importing it loads no stage that scans or judges."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

SUBMODULES = ("records", "stats", "compare", "store", "migrations")
# What runs the pipeline (today and after issue 11's pipeline.py / judging/): the package takes its results
# (spans, a Report) and must not reach back into it.
PIPELINE = (
    "logphase.scan",
    "logphase.pipeline",
    "logphase.judging",
    "logphase.watch",
    "logphase.flight_recorder",
    "logphase.logs.matcher",
    "logphase.logs.timeline",
    "logphase.logs.fast",
    "logphase.stacks",
    "logphase.cli",
)


def test_the_baselines_package_loads_no_pipeline_stage() -> None:
    # GIVEN a fresh interpreter
    # WHEN every submodule of logphase.baselines is imported
    imports = "; ".join(f"import logphase.baselines.{name}" for name in SUBMODULES)
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys; {imports}; print('\\n'.join(sorted(sys.modules)))"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    # THEN all of them loaded, and no module of the pipeline came with them
    assert {f"logphase.baselines.{name}" for name in SUBMODULES} <= set(loaded)
    assert [name for name in loaded if name.startswith(PIPELINE)] == []
