"""The terminal table: what a person reads first, with the verdict in colour when stdout is a terminal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from logphase.report.analysis import (
    confidence_line,
    context,
    facts,
    findings,
    headline,
    phase_table,
    rank_list,
    rank_table,
    rank_title,
    root_title,
    unrecognised_lines,
)
from logphase.report.formats import DEFAULT_WIDTH
from logphase.report.model import Report
from logphase.report.paint import paint, verdict_colour
from logphase.report.picture_text import timeline_lines
from logphase.report.text_table import simple_table

if TYPE_CHECKING:  # types only: a report's formats do not import the run records, nor an analysis the stack model
    from logphase.baselines.records import RunRecord
    from logphase.stacks.model import StacksReport


@dataclass(frozen=True)
class TableFormat:
    colour: bool = False
    width: int = DEFAULT_WIDTH  # the terminal's columns: the timeline is scaled to them

    def analysis(self, report: Report) -> str:
        verdict = paint(report.verdict.value.upper(), verdict_colour(report.verdict), self.colour)
        out: list[str] = [headline(report, verdict), f"  {facts(report)}"]
        doubt = confidence_line(report)
        out += [f"  {doubt}", ""] if doubt else [""]
        timeline = timeline_lines(report, width=self.width, colour=self.colour)
        if timeline:
            out += [*timeline, ""]
        phases, ranks = phase_table(report), rank_table(report)
        if phases.rows:
            out += [simple_table(phases.rows, phases.headers, self.width), ""]
        if ranks.rows:
            out += [f"{rank_title(ranks)}:", simple_table(ranks.rows, ranks.headers, self.width), ""]
        if report.culprit_ranks:
            out += [f"Culprit ranks: {rank_list(report.culprit_ranks)}", ""]
        root = report.root_cause
        if root is not None:
            who = f", {root.rank}" if root.rank else ""
            out += [f"{root_title(report)} at {root.path}:{root.line} ({root.rule}{who}):", *context(report), ""]
        unknown = unrecognised_lines(report)
        if unknown:
            out += [*unknown, ""]
        for block in findings(report):
            for finding in block:
                out.append(f"{finding.label}: {finding.text}")
                if finding.detail:
                    out.append(f"  {finding.detail}")
            out.append("")
        return "\n".join(out).rstrip() + "\n"

    def stacks(self, report: StacksReport) -> str:
        from logphase.report.stacks import (
            GPU_HEADERS,
            GPU_PROCESS_HEADERS,
            PROBLEM_HEADERS,
            gpu_process_rows,
            gpu_rows,
            gpu_title,
            problem_rows,
            render_groups,
            render_tree,
        )

        parts = [paint(report.summary, "red" if report.stuck else "green", self.colour)]
        if report.culprit_ranks:
            parts.append(f"odd ranks: {', '.join(report.culprit_ranks)}")
        if report.divergence is not None:
            parts.append(f"the groups diverge below {report.divergence}")
        details = [f"{report.readable} of {len(report.processes)} processes read", f"{report.samples} sample(s)"]
        if report.samples > 1:
            details.append(f"every {report.interval_s:g}s")
        if report.skew_s is not None:
            details.append(f"capture skew {report.skew_s * 1000:.0f} ms")
        parts.append(", ".join(details))
        tree = render_tree(report, colour=self.colour)
        if tree:
            parts += ["", tree]
        if report.groups:
            parts += ["", render_groups(report, self.width)]
        gpus = gpu_title(report)
        if gpus is not None:
            parts += ["", gpus]
            if gpu_rows(report):
                parts.append(simple_table(gpu_rows(report), GPU_HEADERS, self.width))
            if gpu_process_rows(report):
                parts += ["", simple_table(gpu_process_rows(report), GPU_PROCESS_HEADERS, self.width)]
        problems = problem_rows(report)
        if problems:
            parts += ["", simple_table(problems, PROBLEM_HEADERS, self.width)]
        if report.notes:
            parts += ["", *(f"note: {note}" for note in report.notes)]
        return "\n".join(parts) + "\n"

    def runs(self, runs: Sequence[RunRecord], *, db: Path | None) -> str:
        from logphase.report.runs import render_runs_table  # json and the run records: not an analysis's

        return render_runs_table(runs, self.width) + "\n" if runs else ""

    def run(self, run: RunRecord) -> str:
        from logphase.report.runs import render_run_table

        return render_run_table(run, self.width) + "\n"
