"""Renders recorded runs (`runs list`, `runs show`) as a table, JSON or GitHub markdown (pure: returns strings)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from logphase.durations import format_duration
from logphase.report.text_table import ELLIPSIS, MIN_CUT, fit

if TYPE_CHECKING:  # types only: a report's formats do not import the run records
    from logphase.baselines.records import RunRecord

RUNS_SCHEMA = "logphase.runs/1"

# The verdict (what the log showed) and the user's label apart: a label never hides the verdict. The line
# count is left to `runs show`, so that the list fits 80 columns.
_LIST_HEADERS = ["id", "recorded", "verdict", "label", "setup", "stopped", "ready in", "log"]
_PHASE_HEADERS = ["phase", "began after", "took", "first line", "last line", "ended"]


def render_runs_table(runs: Sequence[RunRecord], width: int | None = None) -> str:
    from tabulate import tabulate  # imported on use: `analyze --format json` does not need it (~12 ms)

    rows = [["" if cell is None else str(cell) for cell in row] for row in _list_rows(runs)]
    return tabulate(fit(rows, _LIST_HEADERS, width), headers=_LIST_HEADERS, tablefmt="simple")


def render_runs_markdown(runs: Sequence[RunRecord]) -> str:
    from tabulate import tabulate

    return tabulate(_list_rows(runs), headers=_LIST_HEADERS, tablefmt="github")


def render_runs_json(runs: Sequence[RunRecord], *, db: Path | None) -> str:
    """The runs of the store at `db`; without `db` (no store there yet) the document names none."""
    document: dict[str, Any] = {"schema": RUNS_SCHEMA}
    if db is not None:
        document["db"] = str(db)
    document["runs"] = [run_json(run) for run in runs]
    return json.dumps(document, indent=2)


def render_run_table(run: RunRecord, width: int | None = None) -> str:
    """One run's facts, a blank line, then its phases; with `width`, each fact cut (`…`) to fit it."""
    return _run_tables(run, facts_format="plain", phases_format="simple", width=width)


def render_run_markdown(run: RunRecord) -> str:
    return _run_tables(run, facts_format="github", phases_format="github")


def render_run_json(run: RunRecord) -> str:
    return json.dumps({"schema": RUNS_SCHEMA, **run_json(run)}, indent=2)


def run_json(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "recorded_at": _when(run.recorded_at),
        "outcome": run.outcome,
        "verdict": run.verdict.value,
        "label": run.label,
        "fingerprint": run.fingerprint.to_json(),
        "lines": run.lines,
        "stop_point": run.stop.to_json(),
        "last_text": run.last_text,
        "ready_s": run.ready_s,
        "started": run.started.isoformat(sep=" ") if run.started else None,
        "paths": list(run.paths),
        "content_hash": run.content_hash,
        "phases": [
            {
                "phase": p.phase.value,
                "start_s": p.start_s,
                "seconds": p.seconds,
                "start_line": p.start_line,
                "end_line": p.end_line,
                "ended": p.ended,
            }
            for p in run.phases
        ],
    }


def _run_tables(run: RunRecord, *, facts_format: str, phases_format: str, width: int | None = None) -> str:
    from tabulate import tabulate

    rows = [(name, "" if value is None else str(value)) for name, value in _facts(run)]
    if width is not None:
        room = max(MIN_CUT, width - max(len(name) for name, _ in rows) - 2)  # tabulate's plain: two spaces between
        rows = [(name, value if len(value) <= room else value[: room - 1].rstrip() + ELLIPSIS) for name, value in rows]
    facts = tabulate(rows, tablefmt=facts_format, disable_numparse=True)
    phases = tabulate(_phase_rows(run), headers=_PHASE_HEADERS, tablefmt=phases_format)
    return f"{facts}\n\n{phases}"


def _list_rows(runs: Sequence[RunRecord]) -> list[list[Any]]:
    return [
        [
            r.id,
            _when(r.recorded_at),
            r.verdict.value,
            r.label or "",
            r.fingerprint.describe(),
            f"{r.stop.phase or '?'} @{r.stop.line}",
            format_duration(r.ready_s) if r.ready_s is not None else "",
            ", ".join(r.paths),
        ]
        for r in runs
    ]


def _facts(run: RunRecord) -> list[tuple[str, Any]]:
    fingerprint = run.fingerprint
    return [
        ("run", run.id),
        ("recorded", _when(run.recorded_at)),
        ("verdict", run.verdict.value),
        ("label", run.label or "-"),
        ("setup", fingerprint.describe()),
        *((name.replace("_", " "), value) for name, value in fingerprint.to_json().items() if value is not None),
        ("lines", run.lines),
        ("stopped", f"{run.stop.describe()}, at line {run.stop.line}"),
        ("last line", run.last_text[:160]),
        ("ready in", format_duration(run.ready_s) if run.ready_s is not None else "-"),
        ("log", ", ".join(run.paths)),
        ("content hash", run.content_hash[:16]),
    ]


def _phase_rows(run: RunRecord) -> list[list[Any]]:
    return [
        [
            p.phase.value,
            format_duration(p.start_s),
            format_duration(p.seconds),
            p.start_line,
            p.end_line,
            "yes" if p.ended else "no",
        ]
        for p in run.phases
    ]


def _when(moment: datetime | None) -> str:
    return moment.isoformat(sep=" ", timespec="seconds") if moment else ""
