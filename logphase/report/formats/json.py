"""JSON: each document's `to_json()`, indented (the stable contracts logphase.analysis/1 and logphase.stacks/1)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from logphase.report.model import Report
from logphase.stacks.model import StacksReport


@dataclass(frozen=True)
class JsonFormat:
    def analysis(self, report: Report) -> str:
        return json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n"

    def stacks(self, report: StacksReport) -> str:
        # ASCII-escaped, as `stacks --format json` always wrote it (files read back with --from)
        return json.dumps(report.to_json(), indent=2) + "\n"
