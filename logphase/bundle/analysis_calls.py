"""The one place the bundle calls the analysis library: the `analyze` report, its formats, failure lines.

When the analysis moves, only this module is re-pointed; the bundle sees plain JSON, markdown and
line numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from logphase import pipeline
from logphase.flight_recorder import judge_dumps, read_dumps
from logphase.jobs import ONE_JOB, Jobs
from logphase.judging.stalls import summarize
from logphase.logs.matcher import SourceMatcher
from logphase.logs.reader import LogSource, read_lines
from logphase.packs import PackSet
from logphase.phases import FAILURE_KINDS
from logphase.report.formats import OutputFormat, pick
from logphase.stacks.model import GpuReading, ProcessSnapshot, StacksReport


@dataclass(frozen=True)
class Analysis:
    """What `logphase analyze --format json` and `--format markdown` print for the same inputs."""

    json: dict[str, Any]
    markdown: str


def analyse(
    sources: list[LogSource],
    packs: PackSet,
    *,
    flight_recorder_dumps: Sequence[str],
    as_of: datetime,
    post_mortem: bool,
    stacks: StacksReport | None = None,
    jobs: Jobs = ONE_JOB,
) -> Analysis:
    """The same library calls as `logphase analyze --pid` (without a baseline): the stacks taken or
    given are judged with the logs, as analyze judges its live stacks."""
    flight = judge_dumps(read_dumps(list(flight_recorder_dumps))) if flight_recorder_dumps else None
    options = pipeline.Options(
        as_of=as_of, post_mortem=post_mortem, flight=flight, stacks=stacks, jobs=jobs, refuse_mixed=False
    )
    report = pipeline.report(sources, packs, options)
    return Analysis(json=report.to_json(), markdown=pick(OutputFormat.MARKDOWN).analysis(report))


def failure_lines(source: LogSource, packs: PackSet, as_of: datetime) -> set[int]:
    """Every line of `source` a rule calls an error, fatal or timeout, and the first line of
    the traceback it ends (one more pass over the source: used only for logs that are cut)."""
    lines: set[int] = set()
    for event in SourceMatcher(packs, as_of).match(read_lines(source)):
        if event.kind in FAILURE_KINDS:
            lines.add(event.line)
            if event.block is not None:
                lines.add(event.block)
    return lines


def summarize_stacks(
    snapshots: Sequence[ProcessSnapshot], packs: PackSet, *, gpus: GpuReading | None = None
) -> StacksReport:
    """What `logphase stacks` reports for these snapshots and GPUs (its `--format json` is the bundle's stacks.json)."""
    return summarize(snapshots, packs.signatures, gpus=gpus)
