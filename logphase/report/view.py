"""The lines behind a verdict (`analyze --rank --phase --tail -C`…) as text, JSON or markdown, in grep's layout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from logphase.ranks import MAIN
from logphase.report.model import Report
from logphase.scan.view import View, ViewRow

SCHEMA = "logphase.view/1"
GROUPS_APART = "--"  # between lines that are not neighbours (grep -C's separator)


def _rows(view: View) -> Iterator[tuple[ViewRow, bool] | None]:
    """Each line once, in the order read, flagged when chosen; with context, None between lines apart."""
    chosen = {hit.row.key for hit in view.hits}
    shown: tuple[int, int] | None = None
    for hit in view.hits:
        for row in (*hit.before, hit.row, *hit.after):
            if shown is not None and row.key <= shown:
                continue
            if view.context and shown is not None and row.key != (shown[0], shown[1] + 1):
                yield None
            shown = row.key
            yield row, row.key in chosen


def counts_as(row: ViewRow) -> str:
    """The events the line made, else the phase its rank was in (`in cuda_graph`), else `-`."""
    if row.events:
        return "; ".join(event.describe() for event in row.events)
    return f"in {row.phase.value}" if row.phase is not None else "-"


def view_text(view: View) -> str:
    """`server.log:1201  TP3  cuda_graph begin  <the line>`; a context line `server.log-1202  …` (grep's
    marks); `--` between groups when context was asked for. Nothing when no line was chosen."""
    rows = list(_rows(view))
    cells = [
        (f"{r.path}{':' if chosen else '-'}{r.line}", r.rank or MAIN, counts_as(r), r.text)
        for r, chosen in (item for item in rows if item is not None)
    ]
    widths = [max((len(cell[i]) for cell in cells), default=0) for i in range(3)]
    out: list[str] = []
    filled = iter(cells)
    for item in rows:
        if item is None:
            out.append(GROUPS_APART)
            continue
        where, rank, event, text = next(filled)
        out.append(f"{where:<{widths[0]}}  {rank:<{widths[1]}}  {event:<{widths[2]}}  {text}".rstrip())
    if view.left_out:
        out.append(
            f"({view.left_out} earlier lines chosen were left out: narrow with --since, --rank, --phase or --tail)"
        )
    return "".join(line + "\n" for line in out)


def view_markdown(view: View, report: Report) -> str:
    from logphase.report.formats.line import report_line

    return f"**{report_line(report).strip()}**\n\n```text\n{view_text(view)}```\n"


def view_json(view: View, report: Report) -> str:
    lines: list[dict[str, Any]] = []
    for item in _rows(view):
        if item is None:
            continue
        row, chosen = item
        lines.append(
            {
                "path": row.path,
                "line": row.line,
                "rank": row.rank,
                "phase": row.phase.value if row.phase else None,
                "time": row.time.isoformat(sep=" ") if row.time else None,
                "text": row.text,
                "events": [
                    {"kind": e.kind.value, "phase": e.phase.value if e.phase else None, "role": e.role, "rule": e.rule}
                    for e in row.events
                ],
                "chosen": chosen,
            }
        )
    document = {"schema": SCHEMA, "lines": lines, "left_out": view.left_out, "analysis": report.to_json()}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
