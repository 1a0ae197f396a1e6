"""JSON: each document's `to_json()`, indented (the stable contracts logphase.analysis/1 and logphase.stacks/1)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from logphase.baselines.records import RunRecord
from logphase.report.model import Report
from logphase.report.runs import render_run_json, render_runs_json
from logphase.stacks.model import StacksReport


@dataclass(frozen=True)
class JsonFormat:
    def analysis(self, report: Report) -> str:
        return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"

    def stacks(self, report: StacksReport) -> str:
        # ASCII-escaped, as `stacks --format json` always wrote it (files read back with --from)
        return json.dumps(report.to_json(), indent=2) + "\n"

    def runs(self, runs: Sequence[RunRecord], *, db: Path | None) -> str:
        return render_runs_json(runs, db=db) + "\n"

    def run(self, run: RunRecord) -> str:
        return render_run_json(run) + "\n"
