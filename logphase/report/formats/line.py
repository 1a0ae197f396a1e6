"""One line: the verdict, phase, rank, reason and `path:line` for a shell prompt, a probe or a CI step's summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from logphase.baselines.records import RunRecord
from logphase.ranks import format_rank_set
from logphase.report.model import Report
from logphase.stacks.model import StacksReport

# Fields are separated by SEPARATOR (`cut -d'|'`, `awk -F' [|] '`); a field never contains one: a
# line break or a `|` in a reason becomes a space or a `/`. A field with nothing to say is NOTHING.
SEPARATOR = " | "
NOTHING = "-"


def one_line(*fields: str | None) -> str:
    """The fields joined by SEPARATOR, each on one line and free of it."""
    cleaned = (" ".join((value or "").replace("|", "/").split()) or NOTHING for value in fields)
    return SEPARATOR.join(cleaned) + "\n"


def report_line(report: Report) -> str:
    """`stalled | cuda_graph | TP3 | no progress for … | server.log:1201`: the rank is the culprits (else the
    root cause's), the place the root cause's line (else the first line the verdict rests on, else the last line)."""
    root = report.root_cause
    ranks = format_rank_set(report.culprit_ranks) if report.culprit_ranks else (root.rank if root else None)
    if root is not None:
        where: str | None = f"{root.path}:{root.line}"
    elif report.support:
        where = f"{report.support[0].path}:{report.support[0].line}"
    elif report.last_line is not None:
        where = f"{report.last_line.path}:{report.last_line.line}"
    else:
        where = None
    return one_line(report.verdict.value, report.phase.value if report.phase else None, ranks, report.reason, where)


@dataclass(frozen=True)
class LineFormat:
    def analysis(self, report: Report) -> str:
        return report_line(report)

    def stacks(self, report: StacksReport) -> str:
        """`stuck | - | TP3 | <summary> | <the frame where they wait>`: the stacks say no phase."""
        frame = report.stall.frame if report.stall is not None else report.divergence
        where = None if frame is None else f"{frame.file}:{frame.line}" if frame.line else frame.file
        ranks = format_rank_set(report.culprit_ranks) if report.culprit_ranks else None
        return one_line(report.state, None, ranks, report.summary, where)

    def runs(self, runs: Sequence[RunRecord], *, db: Path | None) -> str:
        """A line per run, in the order `runs list` gives them (newest first)."""
        return "".join(self.run(run) for run in runs)

    def run(self, run: RunRecord) -> str:
        stop = run.stop
        where = f"{run.paths[0]}:{stop.line}" if run.paths else None
        # the verdict in the verdict's place, as analyze's line has it; the user's label said in the reason
        said = f"run {run.id}" + (f" (labelled {run.label})" if run.label else "") + f": {run.last_text}"
        return one_line(run.verdict.value, stop.phase.value if stop.phase else None, None, said, where)
