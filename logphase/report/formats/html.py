"""HTML: one self-contained page (inline CSS and SVG, nothing fetched) that opens offline and can be mailed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from pathlib import Path

from logphase import __version__
from logphase.baselines.records import RunRecord
from logphase.phases import Phase
from logphase.report.analysis import (
    Table,
    confidence_line,
    context,
    facts,
    findings,
    phase_table,
    rank_list,
    rank_table,
    rank_title,
    root_title,
    shareable_path,
    unrecognised_lines,
    verdict_place,
)
from logphase.report.model import Report
from logphase.report.paint import verdict_colour
from logphase.report.picture import NO_TIMESTAMPS, PHASE_LETTERS, Picture, picture
from logphase.report.runs import render_run_table, render_runs_table
from logphase.report.stacks import (
    GPU_HEADERS,
    GPU_PROCESS_HEADERS,
    GROUP_HEADERS,
    PROBLEM_HEADERS,
    gpu_process_rows,
    gpu_rows,
    gpu_title,
    group_rows,
    problem_rows,
    render_tree,
)
from logphase.stacks.model import StacksReport

# The bars' fills: the terminal's grounds, as a browser shows them.
PHASE_FILLS = {
    Phase.LAUNCH: "#b0b0b0",
    Phase.TOKENIZER: "#d0d0d0",
    Phase.DIST_INIT: "#4fb3bf",
    Phase.WEIGHT_LOAD: "#3b6fd4",
    Phase.KV_CACHE: "#a05bc4",
    Phase.DRAFT_INIT: "#e08ad8",
    Phase.COMPILE: "#d9a520",
    Phase.CUDA_GRAPH: "#3fa34d",
    Phase.HTTP_START: "#6fd6e0",
    Phase.WARMUP: "#f0d35a",
    Phase.READY: "#7ad67a",
    Phase.SERVING: "#2e8b57",
}
# A draft model's own phase (`cuda_graph (draft)`): its phase's hue, darker, so that the target's and the
# draft's bars of one phase are told apart as the text timeline tells them by case (`G` and `g`).
DRAFT_FILLS = {
    Phase.DIST_INIT: "#2b6f78",
    Phase.WEIGHT_LOAD: "#1f3f80",
    Phase.KV_CACHE: "#5e2c78",
    Phase.COMPILE: "#8a6500",
    Phase.CUDA_GRAPH: "#1d5e27",
}


def phase_fill(phase: Phase, draft: bool) -> str:
    """A bar's fill: the phase's, or its draft shade for a draft model's own phase (draft_init is the draft's by
    name, drawn in its own colour)."""
    return DRAFT_FILLS.get(phase, PHASE_FILLS[phase]) if draft else PHASE_FILLS[phase]


# The terminal's verdict colours (report/paint.py: one exhaustive match) as the page draws them.
_COLOUR_FILLS = {"green": "#2e8b57", "cyan": "#1f7a99", "yellow": "#b8860b", "red": "#c62828", "dim": "#666666"}
_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ddd}
.verdict{color:#fff;padding:.1em .5em;border-radius:4px}
table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #eee;text-align:left}
pre{background:#f6f8fa;padding:.8em;white-space:pre-wrap;overflow-wrap:anywhere;font-size:13px}
.facts,.doubt{color:#555}.cause{background:#fde2e2}footer{margin-top:2em;color:#888;font-size:.85em}
svg text{font:12px system-ui,sans-serif}
"""
_PHASE_OF_LETTER = {letter: phase for phase, letter in PHASE_LETTERS.items()}
SVG_WIDTH = 1000
LANE_HEIGHT = 22
LABEL_WIDTH = 130


@dataclass(frozen=True)
class HtmlFormat:
    def analysis(self, report: Report) -> str:
        fill = _COLOUR_FILLS[verdict_colour(report.verdict)]
        where = escape(verdict_place(report))
        body = [
            f'<h1 id="verdict"><span class="verdict" style="background:{fill}">'
            f"{escape(report.verdict.value.upper())}</span>{where} — {escape(report.reason)}</h1>",
            f'<p class="facts">{escape(facts(report, path=shareable_path))}</p>',
        ]
        doubt = confidence_line(report)
        body.append(f'<section id="confidence"><h2>Confidence: {escape(report.confidence)}, and the evidence</h2>')
        if doubt:
            body.append(f'<p class="doubt">{escape(doubt)}</p>')
        if report.support:
            lines = [f"{shareable_path(e.path)}:{e.line}: {e.text}" for e in report.support]
            body.append(_pre(lines))
        body.append("</section>")
        body += ['<section id="timeline"><h2>Timeline</h2>', _timeline(report), "</section>"]
        body += ['<section id="phases"><h2>Phases</h2>', _table(phase_table(report)), "</section>"]
        ranks = rank_table(report)
        if ranks.rows:
            body += [f'<section id="ranks"><h2>{rank_title(ranks)}</h2>', _table(ranks), "</section>"]
        if report.culprit_ranks:
            body.append(f"<p>Culprit ranks: {escape(rank_list(report.culprit_ranks))}</p>")
        root = report.root_cause
        if root is not None:
            title = f"{root_title(report)} at {shareable_path(root.path)}:{root.line} ({root.rule})"
            body += [f'<section id="root-cause"><h2>{escape(title)}</h2>', _pre(context(report)), "</section>"]
        unknown = unrecognised_lines(report)
        if unknown:
            body += ['<section id="unrecognised"><h2>Lines no rule knows</h2>', _pre(unknown), "</section>"]
        if report.stacks is not None:
            stall = report.stacks.stall
            said = f"<p>{escape(stall.summary)}</p>" if stall is not None else "<p>no rank looks stuck</p>"
            body += ['<section id="stacks"><h2>Stacks in the log</h2>', said, _stacks_tree(report.stacks), "</section>"]
        blocks = findings(report)
        if blocks:
            title = "Health route, baseline, stacks, flight recorder, next steps and notes"
            body.append(f'<section id="findings"><h2>{title}</h2><ul>')
            for finding in (finding for block in blocks for finding in block):
                detail = f"<br>{escape(finding.detail)}" if finding.detail else ""
                body.append(f"<li><b>{escape(finding.label)}:</b> {escape(finding.text)}{detail}</li>")
            body.append("</ul></section>")
        return _page(f"logphase: {report.verdict.value}", body)

    def stacks(self, report: StacksReport) -> str:
        body = [f'<h1 id="verdict">{escape(report.summary)}</h1>']
        if report.culprit_ranks:
            body.append(f"<p>Odd ranks: {escape(', '.join(report.culprit_ranks))}</p>")
        body += ['<section id="groups"><h2>Groups</h2>', _table(Table(tuple(GROUP_HEADERS), group_rows(report)))]
        body.append("</section>")
        tree = render_tree(report)
        if tree:
            body += ['<section id="tree"><h2>Merged stacks</h2>', _pre(tree.splitlines()), "</section>"]
        gpus = gpu_title(report)
        if gpus is not None:
            body += ['<section id="gpus"><h2>GPUs</h2>', f"<p>{escape(gpus)}</p>"]
            if gpu_rows(report):
                body.append(_table(Table(tuple(GPU_HEADERS), gpu_rows(report))))
            if gpu_process_rows(report):
                body.append(_table(Table(tuple(GPU_PROCESS_HEADERS), gpu_process_rows(report))))
            body.append("</section>")
        problems = problem_rows(report)
        if problems:
            body += ['<section id="not-read"><h2>Not read</h2>', _table(Table(tuple(PROBLEM_HEADERS), problems))]
            body.append("</section>")
        return _page("logphase stacks", body)

    def runs(self, runs: Sequence[RunRecord], *, db: Path | None) -> str:
        if not runs:
            return ""
        return _page("logphase runs", ["<h1>Recorded runs</h1>", f"<pre>{escape(render_runs_table(runs))}</pre>"])

    def run(self, run: RunRecord) -> str:
        return _page(
            f"logphase run {run.id}", [f"<h1>Run {run.id}</h1>", f"<pre>{escape(render_run_table(run))}</pre>"]
        )


def _stacks_tree(stacks: object) -> str:
    """The merged tree when the section is a StacksReport (the in-log stacks are one)."""
    if isinstance(stacks, StacksReport):
        tree = render_tree(stacks)
        return _pre(tree.splitlines()) if tree else ""
    return ""


def _page(title: str, body: list[str]) -> str:
    return (
        "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en"><head><meta charset="utf-8">',
                '<meta name="viewport" content="width=device-width, initial-scale=1">',
                f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
                *body,
                f"<footer>generated by logphase {escape(__version__)}</footer>",
                "</body></html>",
            ]
        )
        + "\n"
    )


def _pre(lines: list[str]) -> str:
    return "<pre>" + "\n".join(escape(line) for line in lines) + "</pre>"


def _table(table: Table) -> str:
    if not table.rows:
        return "<p>none</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    rows = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in table.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _timeline(report: Report) -> str:
    drawn = picture(report)
    if drawn is None:
        return f"<p>{escape(NO_TIMESTAMPS if report.phases else 'No phase was recognised.')}</p>"
    return _svg(drawn)


def _svg(drawn: Picture) -> str:
    """Lanes of bars on one axis; the marked group's label in the verdict's colour, the root cause a red
    line, the baseline's phase ends ticks in their phase's colour; a legend below."""
    span = max(drawn.seconds, 1e-9)
    plot = SVG_WIDTH - LABEL_WIDTH - 10
    rows = len(drawn.lanes) + (1 if drawn.ticks else 0)
    top = 20

    def bottom_of(count: int) -> int:
        return top + count * LANE_HEIGHT

    def x(moment: datetime) -> float:
        return LABEL_WIDTH + plot * (moment - drawn.start).total_seconds() / span

    parts = [
        "",  # the <svg> tag, once the legend's height is known
        f'<text x="{LABEL_WIDTH}" y="14">{drawn.start:%H:%M:%S}</text>',
        f'<text x="{SVG_WIDTH - 10}" y="14" text-anchor="end">{drawn.end:%H:%M:%S}</text>',
    ]
    for index, lane in enumerate(drawn.lanes):
        y = top + index * LANE_HEIGHT
        colour = _COLOUR_FILLS[verdict_colour(lane.mark)] if lane.mark is not None else "#222"
        mark = f" ({lane.mark.value})" if lane.mark is not None else ""
        parts.append(f'<text x="4" y="{y + 15}" fill="{colour}">{escape(lane.label + mark)}</text>')
        for bar in lane.bars:
            width = max(2.0, x(bar.end) - x(bar.start))
            faded = "" if bar.ended else ' fill-opacity="0.6"'  # not ended: the phase was still on
            parts.append(
                f'<rect x="{x(bar.start):.1f}" y="{y + 3}" width="{width:.1f}" height="{LANE_HEIGHT - 6}" '
                f'fill="{phase_fill(bar.phase, bar.draft)}"{faded}>'
                f"<title>{escape(bar.name)} {bar.start:%H:%M:%S}–{bar.end:%H:%M:%S}</title></rect>"
            )
    if drawn.ticks:
        y = top + len(drawn.lanes) * LANE_HEIGHT
        parts.append(f'<text x="4" y="{y + 15}">baseline</text>')
        for tick in drawn.ticks:
            fill = PHASE_FILLS[tick.phase] if tick.phase else "#222"
            parts.append(
                f'<rect x="{x(tick.at) - 1:.1f}" y="{y + 2}" width="3" height="{LANE_HEIGHT - 4}" fill="{fill}">'
                f"<title>{escape(tick.label)}</title></rect>"
            )
    if drawn.cause is not None:
        at = x(drawn.cause.at)
        bottom = bottom_of(rows)
        anchor = "end" if at > SVG_WIDTH - 150 else "middle"  # its words stay inside the picture
        parts.append(f'<line x1="{at:.1f}" y1="{top}" x2="{at:.1f}" y2="{bottom}" stroke="#c62828" stroke-width="2"/>')
        parts.append(f'<text x="{at:.1f}" y="{bottom + 14}" fill="#c62828" text-anchor="{anchor}">')
        parts.append(f"{escape(drawn.cause.label)}</text>")
    cursor, line = float(LABEL_WIDTH), bottom_of(rows) + 30
    for letter, name in drawn.legend():  # wrapped: about 7 px a character
        if cursor + 24 + 7 * len(name) > SVG_WIDTH:
            cursor, line = float(LABEL_WIDTH), line + 18
        fill = phase_fill(_PHASE_OF_LETTER[letter.upper()], letter.islower())
        parts.append(f'<rect x="{cursor:.0f}" y="{line - 10}" width="12" height="12" fill="{fill}"/>')
        parts.append(f'<text x="{cursor + 16:.0f}" y="{line}">{escape(name)}</text>')
        cursor += 24 + 7 * len(name)
    height = line + 10
    parts[0] = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_WIDTH}" height="{height}" viewBox="0 0 {SVG_WIDTH} '
        f'{height}" style="max-width:100%;height:auto" role="img" aria-label="phases per rank group over time">'
    )
    parts.append("</svg>")
    return "\n".join(parts)
