"""scan(): a run's log files, each read once (by its fast path where it takes one) and pushed through its SourceScan."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from logphase.frames import TRIGGER
from logphase.jobs import ONE_JOB, Jobs
from logphase.logs.reader import LogSource, envelopes_of, holds_at_most, read_lines
from logphase.logs.templates import TemplateMiner
from logphase.logs.timeline import TimelineBuilder
from logphase.packs import PackSet
from logphase.scan import feed as feeding
from logphase.scan.feed import CONTEXT_AFTER, CONTEXT_BEFORE, DistInitClock, ScanResult
from logphase.scan.session import SourceScan

if TYPE_CHECKING:
    from pathlib import Path

    from logphase.logs.fast import FastLines, Plan
    from logphase.logs.fast.caches import FastCaches
    from logphase.logs.fast.ranges import Workers
    from logphase.scan.view import LineView

# About where the fast path starts to pay on the bench shapes (BENCHMARKS.md, issue 27 item 5): below,
# the plain path was ahead on every shape. Both give the same report: the threshold moves only the time.
PLAIN_LINES = 2000


def scan(
    sources: list[LogSource],
    packs: PackSet,
    as_of: datetime,
    *,
    fast: bool | None = None,
    jobs: Jobs = ONE_JOB,
    caches: Path | None = None,
    tap: LineView | None = None,
) -> ScanResult:
    """One streaming pass over every source. `fast`: the matcher sees only the lines that can
    change the result (logs/fast/); the result is the same. None (the default): the fast path for
    every source but a file the plain head holds whole (see `_fast_for`). `jobs`: worker processes
    find the fast path's candidate lines of big files ahead of the pass (logs/fast/ranges.py); the
    same result. `caches`: the folder where the fast path keeps its scan plans and scanners (None:
    none), handed to it here so that a scan that does not take it imports none of it. `tap` is shown
    every line and the events it made (the lines behind a verdict, scan/view.py): it reads every line,
    so the plain path."""
    fast_sources = [_fast_for(source, False if tap is not None else fast) for source in sources]
    if not any(fast_sources):
        # no source takes the fast path: nothing of it is imported (~10 ms of a small log's start-up)
        return _scan(sources, packs, as_of, fast_sources=fast_sources, jobs=ONE_JOB, workers=None, tap=tap)
    from logphase.logs.fast.caches import FastCaches
    from logphase.logs.fast.ranges import workers_for

    kept = FastCaches.at(caches)
    with workers_for(jobs, [source.path for source in sources]) as workers:
        return _scan(sources, packs, as_of, fast_sources=fast_sources, jobs=jobs, workers=workers, caches=kept)


def _fast_for(source: LogSource, fast: bool | None) -> bool:
    """Whether `source` is read by the fast path. Left to the scan (None), a file of at most
    PLAIN_LINES lines is read plainly: the fast path pays a fixed cost before its first line (its
    plan, scanner and bare-start tables read back, hyperscan's extension loaded) and reads the head of
    YEAR_LOOKAHEAD lines in full anyway, so below some thousands of lines it only adds work (a probe
    of each line that may belong to a steady run, templates learnt for lines that never come). The
    result is the same on both paths (tests/paste, test_prefilter*)."""
    if fast is not None:
        return fast
    return not holds_at_most(source, PLAIN_LINES)


def _scan(
    sources: list[LogSource],
    packs: PackSet,
    as_of: datetime,
    *,
    fast_sources: list[bool],
    jobs: Jobs,
    workers: Workers | None,
    caches: FastCaches | None = None,
    tap: LineView | None = None,
) -> ScanResult:
    builder = TimelineBuilder(job_systems=packs.job_systems, dumps=packs.dump_patterns)
    result = ScanResult(timeline=builder.finish(), unrecognised=TemplateMiner(packs))
    plan: Plan | None = None
    clocks = DistInitClock([source.name for source in sources]) if len(sources) > 1 else None
    for index, source in enumerate(sources):
        envelopes = envelopes_of(source, packs)
        result.notes += envelopes.notes(source.name)
        # the fast path reads bytes itself: envelopes that are a prefix of each line (docker, CRI, journald,
        # srun, a quote) it reads too; a hard-wrapped paste or an export listed newest first takes the plain one
        filtered: FastLines | None = None
        if envelopes.prefixes_only and fast_sources[index]:
            from logphase.logs.fast import FastLines, plan_for
            from logphase.logs.fast.ranges import oracle_for

            if plan is None:
                # the first source that takes the fast path
                plan = plan_for(packs, (TRIGGER,), caches.plans if caches is not None else None)
            if plan.enabled:
                filtered = FastLines(
                    source,
                    plan,
                    as_of,
                    context=(CONTEXT_BEFORE, CONTEXT_AFTER),
                    plain_head=feeding.YEAR_LOOKAHEAD,
                    scanners=caches.scanners if caches is not None else None,
                    ranges=oracle_for(workers, source.path, jobs),
                )
        session = SourceScan(
            index,
            source.name,
            packs,
            as_of,
            builder,
            result,
            restarts=len(sources) == 1,
            clocks=clocks,
            started=filtered.attach if filtered is not None else None,
            tap=tap,
            rank_prefix=source.rank_prefix,
            clock_offset_s=source.clock_offset_s,
        )
        for line in filtered if filtered is not None else read_lines(source):
            session.push(line)
        session.end()
        if filtered is not None:
            filtered.stats.count_input(source)
            session.count_skipped(filtered.stats)  # steady events counted, not read
    result.timeline = builder.finish()
    if clocks is not None:
        result.notes += clocks.notes
    return result
